"""The package's architecture, checked from the source: what docs/architecture.md states.

The page's table "What each module may import" is the data of the import
rules: this file reads it (it has no table of its own). Its list "Rules that
hold everywhere" names the other rules, each checked here by the test of the
same key (``RULES``), with the numbers and exceptions the page gives. Every
import counts, including those inside functions; imports guarded by
``if TYPE_CHECKING:`` are for type checkers and do not run.
"""
import ast
import re
from pathlib import Path

import pytest

import ikdr

SRC = Path(ikdr.__file__).parent
PAGE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _module_name(path):
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}
TREES = {m: ast.parse(p.read_text()) for m, p in MODULES.items()}
#: compiled extension modules (no source to read)
COMPILED = {"ikdr._core"}


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def _within(module, prefix):
    return module == prefix or module.startswith(prefix + ".")


# ---------------------------------------------------------------- the source's imports
def _resolve(module, node):
    """Absolute module name of an ImportFrom node in ``module``."""
    if node.level == 0:
        return node.module
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(node):
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(module):
    """[(target module, imported name or None, line, inside a function, bound alias)]."""
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom):
                target = _resolve(module, child)
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    bound = alias.asname or alias.name
                    if sub in MODULES or sub in COMPILED:      # ``from package import module``
                        found.append((sub, None, child.lineno, in_function, bound))
                    else:
                        found.append((target, alias.name, child.lineno, in_function, None))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    module_bound = alias.name if alias.asname else alias.name.split(".")[0]
                    found.append((alias.name, None, child.lineno, in_function,
                                  (bound, module_bound)))
            visit(child, nested)

    visit(TREES[module], False)
    return [entry for entry in found if _within(entry[0], "ikdr")]


IMPORTS = {m: _imports(m) for m in MODULES}


# ---------------------------------------------------------------- the page
PAGE_TEXT = PAGE.read_text(encoding="utf-8")


def _section(title):
    start = PAGE_TEXT.index(f"## {title}\n")
    end = PAGE_TEXT.find("\n## ", start + 1)
    return PAGE_TEXT[start:end if end >= 0 else None]


def _names(text):
    return re.findall(r"`(ikdr[\w.]*)`", text)


def _table():
    """The rows of "What each module may import", lowest first: (modules, allowed),
    ``allowed`` a list of (name, package only)."""
    lines = [line for line in _section("What each module may import").splitlines()
             if line.startswith("|")][2:]
    rows = []
    for line in lines:
        modules, _, may = [cell.strip() for cell in line.strip("|").split("|")]
        if may == "nothing of ikdr":
            allowed = []
        elif may.startswith("the rows above"):
            excluded = set(_names(may))
            allowed = [(name, False) for names, _ in rows for name in names
                       if name not in excluded]
        else:
            allowed = [(name, bool(only)) for name, only in
                       re.findall(r"`(ikdr[\w.]*)`( \(package only\))?", may)]
        rows.append((_names(modules), allowed))
    return rows


TABLE = _table()


def _row(module):
    """Index of the row a module belongs to (the longest name that covers it)."""
    best, index = -1, None
    for i, (names, _) in enumerate(TABLE):
        for name in names:
            if _within(module, name) and len(name) > best:
                best, index = len(name), i
    return index


def _allowed(importer, target):
    row = _row(importer)
    if _row(target) == row:
        return True
    return any(target == name if only else _within(target, name)
               for name, only in TABLE[row][1])


def _rule(key):
    """The text of the bullet ``**key**`` of "Rules that hold everywhere"."""
    rules = _section("Rules that hold everywhere")
    match = re.search(rf"^- \*\*{re.escape(key)}\*\*(.*?)(?=^- \*\*|\Z)", rules, re.S | re.M)
    assert match, f"the page states no rule {key!r}"
    return " ".join(match.group(1).split())


# ---------------------------------------------------------------- the table
def test_the_page_has_the_table():
    assert len(TABLE) >= 10 and all(names for names, _ in TABLE)


def test_every_module_has_a_row():
    assert [m for m in list(MODULES) + sorted(COMPILED) if _row(m) is None] == []


def test_each_row_imports_only_rows_above_it():
    """The table is a layering: a row lists only modules of the rows above it."""
    upward = [f"row {i} ({names[0]}) lists {name}" for i, (names, allowed) in enumerate(TABLE)
              for name, _ in allowed if _row(name) is None or _row(name) >= i]
    assert upward == []


def test_imports_follow_the_table():
    broken = [f"{m}:{line} imports {t} (row of {TABLE[_row(m)][0][0]})"
              for m, imports in IMPORTS.items() for t, _, line, _, _ in imports
              if (t in MODULES or t in COMPILED) and not _allowed(m, t)]
    assert broken == []


# ---------------------------------------------------------------- the rules
def test_no_cycle():
    _rule("No cycle")
    graph = {m: sorted({t for t, *_ in IMPORTS[m] if t in MODULES and t != m}) for m in MODULES}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def strongconnect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            strongconnect(v)
    assert cycles == []


def test_imports_at_the_top():
    lazy = tuple(name for name in _names(_rule("Imports at the top")) if name in MODULES)
    assert lazy, "the rule names the package allowed to import inside functions"
    inside = [f"{m}:{line} imports {t}" for m, imports in IMPORTS.items()
              for t, _, line, in_function, _ in imports
              if in_function and not any(_within(m, name) for name in lazy)]
    assert inside == []


def _private_exceptions():
    """(private modules any module may import as the table says, {private module:
    its one importer}) as the rule states them."""
    text = _rule("Private names stay private")
    shared = re.search(r"private modules ((?:`[\w.]+`(?:, | and )?)+)", text)
    owners = dict(re.findall(r"`(ikdr\._\w+)`[^`]*? by `(ikdr[\w.]*)` alone", text))
    return tuple(_names(shared.group(1))), owners


def test_private_names_stay_private():
    shared, owners = _private_exceptions()
    assert shared and owners

    def private_module(name):
        return any(_private(part) for part in name.split(".")[1:])

    def may_import(importer, module):
        if not private_module(module) or any(_within(module, s) for s in shared):
            return True
        owner = next((o for p, o in owners.items() if _within(module, p)), None)
        return owner == importer or _within(importer, module)

    offences = []
    for m, imports in IMPORTS.items():
        modules = {}                          # local name -> the module it is bound to
        for t, name, line, _, bound in imports:
            if name is None and not may_import(m, t):
                offences.append(f"{m}:{line} imports the private module {t}")
            if name is not None:
                if _private(name) and t != m:
                    offences.append(f"{m}:{line} imports {t}.{name}")
                if not may_import(m, t):
                    offences.append(f"{m}:{line} imports from the private module {t}")
            if isinstance(bound, tuple):
                modules[bound[0]] = bound[1]
            elif bound is not None:
                modules[bound] = t
        for node in ast.walk(TREES[m]):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            dotted = ast.unparse(node.value)
            head = dotted.split(".")[0]
            if head in modules:
                target = modules[head] + dotted[len(head):]
                owner = owners.get(target)
                if target != m and owner != m:
                    offences.append(f"{m}:{node.lineno} reads {target}.{node.attr}")
    assert offences == []


def test_kernels_answer_for_themselves():
    """No isinstance on kernel types and no kernel's private name outside ikdr.kernels."""
    _rule("Kernels answer for themselves")
    bases, private = {}, set()
    for m, tree in TREES.items():
        if not _within(m, "ikdr.kernels"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {ast.unparse(b) for b in node.bases}
                for item in node.body:
                    names = [item.name] if isinstance(item, ast.FunctionDef) else \
                        [t.id for t in getattr(item, "targets", []) if isinstance(t, ast.Name)]
                    private.update(n for n in names if _private(n))
    # the kernel types: Kernel's subclasses (isinstance(x, Kernel) itself checks a type)
    kernel_types = {"Kernel"}
    while True:
        more = {name for name, of in bases.items() if of & kernel_types} - kernel_types
        if not more:
            break
        kernel_types |= more
    kernel_types.discard("Kernel")
    assert {"Gaussian", "ConicKernel", "SNE"} <= kernel_types and "_term" in private
    offenders = []
    for m, tree in TREES.items():
        if _within(m, "ikdr.kernels"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if names & kernel_types:
                    offenders.append(f"{m}:{node.lineno} {ast.unparse(node)}")
            if isinstance(node, ast.Attribute) and node.attr in private:
                offenders.append(f"{m}:{node.lineno} {ast.unparse(node)}")
    assert offenders == []


def _provider_classes():
    """(W-step providers, clustering providers): the classes of ``ikdr.passes`` with
    every method of the protocol ``ikdr.solver.problem.Provider``, those with a
    ``w_step_provider``, and the subclasses of each."""
    protocol = next(node for node in TREES["ikdr.solver.problem"].body
                    if isinstance(node, ast.ClassDef) and node.name == "Provider")
    required = {item.name for item in protocol.body if isinstance(item, ast.FunctionDef)}
    assert required >= {"check_data", "fit_kernel", "problem"}
    classes = {node.name: node for m, tree in TREES.items() if _within(m, "ikdr.passes")
               for node in tree.body if isinstance(node, ast.ClassDef)}

    def methods(node):
        return {item.name for item in node.body if isinstance(item, ast.FunctionDef)}

    def with_subclasses(found):
        while True:
            more = {name for name, node in classes.items()
                    if {ast.unparse(b).split(".")[-1] for b in node.bases} & found} - found
            if not more:
                return found
            found |= more

    wstep = with_subclasses({name for name, node in classes.items()
                             if methods(node) >= required})
    clustering = with_subclasses({name for name, node in classes.items()
                                  if "w_step_provider" in methods(node)})
    return wstep, clustering


def _builds(tree, names):
    """[(line, class built, the class whose body holds the call or None)] of the calls
    to the classes ``names`` in a module."""
    found = []

    def visit(node, owner):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.ClassDef) else owner
            if isinstance(child, ast.Call) and ast.unparse(child.func).split(".")[-1] in names:
                found.append((child.lineno, ast.unparse(child.func).split(".")[-1], owner))
            visit(child, inner)

    visit(tree, None)
    return found


def test_the_page_names_every_provider():
    """The rule's list of providers is the set of provider classes in the code."""
    named = set(re.findall(r"`([A-Z]\w+)`", _rule("Providers come from resolve")))
    wstep, clustering = _provider_classes()
    assert {"ExactPasses", "SparsePasses", "ExactClustering"} <= wstep | clustering
    assert named == wstep | clustering


def test_providers_come_from_resolve():
    """A provider is built in ``ikdr.passes.choice`` only (a clustering provider builds
    its W-step's), and imported by no module outside ``ikdr.passes`` but the facade."""
    text = _rule("Providers come from resolve")
    wstep, clustering = _provider_classes()
    providers = wstep | clustering
    builder = "ikdr.passes.choice"
    assert builder in _names(text) and builder in MODULES
    facades = [name for name in _names(text)
               if name in MODULES and not _within(name, "ikdr.passes")]
    assert facades == ["ikdr.distributed"]
    offenders = []
    for m, tree in TREES.items():
        if m == builder:
            continue
        offenders += [f"{m}:{line} builds {name}" for line, name, owner in _builds(tree, providers)
                      if not (owner in clustering and name in wstep)]
        if _within(m, "ikdr.passes") or m in facades:
            continue
        offenders += [f"{m}:{line} imports {name}" for t, name, line, _, _ in IMPORTS[m]
                      if name in providers]
    assert offenders == []


def test_one_name_one_class():
    _rule("One name, one class")
    where = {}
    for m, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(f"{m}:{node.lineno}")
    assert {name: at for name, at in where.items() if len(at) > 1} == {}


def _fitted(name):
    return name.endswith("_") and not name.startswith("_") and not name.endswith("__")


def _fitted_writes(function):
    """The fitted attributes a method assigns on ``self`` (``self.x_ = ``, augmented,
    in a tuple target, or ``setattr(self, "x_", ...)``), nested functions included."""
    out = set()
    for node in ast.walk(function):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        out |= {e.attr for target in targets for e in ast.walk(target)
                if isinstance(e, ast.Attribute) and ast.unparse(e.value) == "self"
                and _fitted(e.attr)}
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and \
                len(node.args) >= 2 and ast.unparse(node.args[0]) == "self" and \
                isinstance(node.args[1], ast.Constant) and _fitted(str(node.args[1].value)):
            out.add(node.args[1].value)
    return out


def _methods(name, classes):
    """The methods an instance of class ``name`` runs: {method: (defining class, node)},
    the first definition along its bases (depth first, the source's classes only)."""
    methods, order, seen = {}, [name], set()
    while order:
        current = order.pop(0)
        if current in seen or current not in classes:
            continue
        seen.add(current)
        node = classes[current]
        for item in node.body:
            if isinstance(item, ast.FunctionDef):
                methods.setdefault(item.name, (current, item))
        order += [ast.unparse(b).split(".")[-1] for b in node.bases]
    return methods


def test_one_writer_per_fitted_attribute():
    _rule("One writer per fitted attribute")
    classes = {node.name: node for tree in TREES.values() for node in tree.body
               if isinstance(node, ast.ClassDef)}
    estimators = _estimators()
    assert {"ISM", "ISMClustering", "KDAC", "KNetClustering"} <= estimators
    writers = {}
    for name in sorted(estimators):
        for method, (owner, node) in _methods(name, classes).items():
            for attribute in _fitted_writes(node):
                writers.setdefault((name, attribute), set()).add(f"{owner}.{method}")
    assert ("KDAC", "labels_") in writers          # the writes are seen
    several = {f"{name}.{attribute}": sorted(at) for (name, attribute), at in writers.items()
               if len(at) > 1}
    assert several == {}


def _limits():
    text = _rule("Short modules and functions")
    modules = re.search(r"no module is longer than ([\d,]+) lines", text)
    functions = re.search(r"no function longer than ([\d,]+) lines", text)
    return int(modules.group(1).replace(",", "")), int(functions.group(1).replace(",", ""))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_short_modules_and_functions(module):
    max_module, max_function = _limits()
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= max_module, f"{module} has {lines} lines"
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines, line {node.lineno})"
            for node in ast.walk(TREES[module])
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > max_function]
    assert long == [], f"{module}: functions longer than {max_function} lines"


def _parameter_limit():
    text = _rule("Short parameter lists")
    return int(re.search(r"takes more than ([\d,]+) parameters", text).group(1).replace(",", ""))


def _estimators():
    """Names of the classes deriving from scikit-learn's BaseEstimator, over the source."""
    bases = {node.name: {ast.unparse(b).split(".")[-1] for b in node.bases}
             for tree in TREES.values() for node in ast.walk(tree)
             if isinstance(node, ast.ClassDef)}
    found = {"BaseEstimator"}
    while True:
        more = {name for name, of in bases.items() if of & found} - found
        if not more:
            return found - {"BaseEstimator"}
        found |= more


def _parameters(function, in_class):
    """The parameters a caller passes: positional, keyword-only, ``*args`` and
    ``**kwargs``; not a method's ``self`` or ``cls``."""
    args = function.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    if in_class and names and names[0] in ("self", "cls"):
        names = names[1:]
    return names


def _functions(tree):
    """(qualified name, node, within a class, class name) of every function of a
    module, nested ones included."""
    found = []

    def visit(node, prefix, cls):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found.append((name, child, cls is not None, cls))
                visit(child, name + ".", None)
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".", child.name)
            else:
                visit(child, prefix, cls)

    visit(tree, "", None)
    return found


def _parameter_exemptions():
    """The functions the rule exempts by name (``module.function``: the names of the
    rule that are a module's function, not its options classes), besides the
    estimators' ``__init__``."""
    def is_function(name):
        module, _, function = name.rpartition(".")
        return module in MODULES and any(
            isinstance(node, ast.FunctionDef) and node.name == function
            for node in TREES[module].body)

    return {name for name in _names(_rule("Short parameter lists")) if is_function(name)}


def test_short_parameter_lists():
    """Only the estimators' ``__init__`` and the functions the rule names (the public
    ``ism``) may take more than the limit: an ``__all__`` exempts nothing."""
    limit = _parameter_limit()
    estimators = _estimators()
    exempt = _parameter_exemptions()
    assert {"ISM", "ISMClustering", "KDAC", "KernelSVD"} <= estimators
    assert exempt == {"ikdr.reduction.function.ism"}
    functions = {m: _functions(tree) for m, tree in TREES.items()}
    long = [f"{m}:{node.lineno} {name} ({len(_parameters(node, in_class))} parameters)"
            for m, found in functions.items() for name, node, in_class, cls in found
            if not (cls in estimators and name.endswith(".__init__"))
            and f"{m}.{name}" not in exempt and len(_parameters(node, in_class)) > limit]
    assert long == [], f"functions with more than {limit} parameters: {long}"


#: the page's rules (their keys) and the test of each
RULES = {
    "No cycle": test_no_cycle,
    "Imports at the top": test_imports_at_the_top,
    "Private names stay private": test_private_names_stay_private,
    "Kernels answer for themselves": test_kernels_answer_for_themselves,
    "Providers come from resolve": test_providers_come_from_resolve,
    "One name, one class": test_one_name_one_class,
    "One writer per fitted attribute": test_one_writer_per_fitted_attribute,
    "Short modules and functions": test_short_modules_and_functions,
    "Short parameter lists": test_short_parameter_lists,
}


def test_every_rule_on_the_page_is_checked():
    stated = re.findall(r"^- \*\*(.+?)\*\*", _section("Rules that hold everywhere"), re.M)
    assert sorted(stated) == sorted(RULES)
