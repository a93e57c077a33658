"""What a reader sees: checks on the built HTML site, and in a browser where there is one.

A build that passes ``sphinx -W`` can still show a reader a theme's error box
(furo paints one over a ``contents`` list with CSS, so no warning fires), a
summary cut at an abbreviation, a tracker number, a page no menu leads to,
formulas left as ``\\(XW\\)`` when MathJax cannot be fetched, a path of the
machine that built or measured it, talk of branches and commits, a gallery
example without its output, or a table cut off at the edge of the text. Each
check below reads the site built once by ``tests/test_docs.py`` (``build_site``).

Runs when the docs extra is installed (``pip install ".[docs]"``), skipped
otherwise. The browser checks need Chromium (``apt-get install chromium``, or
``IKDR_CHROMIUM=/path/to/chrome``) and are skipped without it: screenshots of the
index, the API reference and a gallery page must not be blank and the rendered
page must carry the expected title; MathJax must typeset the formulas with the
network switched off; at a 1280-pixel wide window every table fits its column
or scrolls inside it. The screenshots are kept in ``DIR/screenshots`` when
``IKDR_DOCS_OUT=DIR`` is set.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .test_docs import DOCS_UNAVAILABLE, ROOT, SKIP_REASON, build_site

pytestmark = pytest.mark.skipif(DOCS_UNAVAILABLE, reason=SKIP_REASON)

# pages Sphinx makes for itself: no reader content, not in any table of contents
GENERATED_BY_SPHINX = {"genindex.html", "search.html", "py-modindex.html"}

# A summary (autosummary's first sentence) must not stop on one of these: the table then
# shows "... (dissertation ch." instead of the sentence.
ABBREVIATION_END = re.compile(
    r"(?:^|[\s(\[,;])(?:ch|chap|eqs?|sec|secs|app|apps|fig|figs|alg|algs|tab|thm|def|prop|lem|"
    r"cor|cf|vs|resp|approx|ref|refs|no|nos|vol|pp?|e\.g|i\.e|s\.t|w\.r\.t|al|incl)\.$",
    re.IGNORECASE)
# a work item of the project's tracker: "issue 15", "issues 15 and 20", "issue-14", "#15" after
# "issue", and "the table" (a reader has no tracker to look them up in)
WORK_ITEM = re.compile(r"\b(?:issues?|tickets?)[\s#-]*\d+|\bthe issue(?:'s|\u2019s)?\b",
                       re.IGNORECASE)


@pytest.fixture(scope="module")
def site():
    proc, out = build_site()
    # a build with warnings still wrote its pages (--keep-going): check them all the same;
    # tests/test_docs.py reports the warnings
    if not (out / "index.html").is_file():
        pytest.fail("the docs build wrote no site:\n" + proc.stderr[-4000:])
    return out


@pytest.fixture(scope="module")
def bs4():
    return pytest.importorskip("bs4", reason="beautifulsoup4 is not installed: "
                                             "pip install '.[docs]'")


def html_pages(site):
    """Every page of the site, skipping _static/, _sources/, _downloads/ and _images/."""
    return sorted(p for p in site.rglob("*.html")
                  if not any(part.startswith("_") for part in p.relative_to(site).parts))


def reader_pages(site):
    return [p for p in html_pages(site) if p.relative_to(site).as_posix() not in GENERATED_BY_SPHINX]


def parse(bs4, path):
    return bs4.BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def visible_text(soup):
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    return re.sub(r"\s+", " ", soup.get_text(" ")).strip()


def _theme_error_selectors(site):
    """CSS selectors of the rules that paint an error text (``content: "ERROR..."``)."""
    selectors = []
    for css in sorted((site / "_static").rglob("*.css")):
        text = css.read_text(encoding="utf-8", errors="replace")
        for match in re.finditer(r"([^{}]+)\{[^{}]*?content:\s*([\"'])((?:(?!\2).)*)\2",
                                 text):
            if re.search(r"\b(?:ERROR|WARNING)\b", match.group(3)):
                for selector in match.group(1).split(","):
                    selector = re.sub(r"::?(?:before|after|marker)\b", "", selector).strip()
                    selectors.append((selector or "*", match.group(3)[:80], css.name))
    return selectors


def test_no_theme_error_text(site, bs4):
    """No element is styled with a theme's error text, and docutils left no error in a page."""
    selectors = _theme_error_selectors(site)
    found = []
    for page in reader_pages(site):
        soup = parse(bs4, page)
        name = page.relative_to(site).as_posix()
        for selector, message, css in selectors:
            try:
                hits = soup.select(selector)
            except Exception:     # a selector soupsieve does not know (:hover, ...): no page state
                continue
            if hits:
                found.append(f"{name}: {len(hits)} x {selector!r} -> {message!r} ({css})")
        for node in soup.select(".system-message, .problematic"):
            found.append(f"{name}: docutils {node.get('class')}: {visible_text(node)[:120]!r}")
    assert not found, "theme or docutils error text in the rendered pages:\n" + "\n".join(found)


def test_summaries_are_whole_sentences(site, bs4):
    """Every autosummary line ends its sentence: not inside a parenthesis, not on 'Eq.'."""
    checked, bad = 0, []
    for page in html_pages(site):
        soup = parse(bs4, page)
        for row in soup.select("table.autosummary tr"):
            cells = row.find_all("td")
            if len(cells) < 2:
                continue
            for math in cells[1].select(".math"):     # formulas may hold any bracket
                math.replace_with(" MATH ")
            name, summary = visible_text(cells[0]), visible_text(cells[1])
            checked += 1
            prose = re.sub(r"``.*?``", "", summary)
            problems = [why for why, failed in (
                ("empty", not summary),
                ("ends inside a parenthesis", prose.count("(") > prose.count(")")),
                ("ends inside a bracket", prose.count("[") > prose.count("]")),
                ("ends on an abbreviation", bool(ABBREVIATION_END.search(summary))),
            ) if failed]
            if problems:
                bad.append(f"{page.relative_to(site)}: {name}: {summary!r} "
                           f"({', '.join(problems)})")
    assert checked >= 50, f"only {checked} summary lines found: did the API page change?"
    assert not bad, "summaries cut in the middle:\n" + "\n".join(bad)


def test_no_work_item_references(site, bs4):
    """No 'issue 15' in what a reader sees: pages, navigation, downloadable examples."""
    found = []
    for page in reader_pages(site):
        text = visible_text(parse(bs4, page))
        for match in WORK_ITEM.finditer(text):
            context = text[max(0, match.start() - 60):match.end() + 40]
            found.append(f"{page.relative_to(site)}: ...{context}...")
    downloads = site / "_downloads"
    for path in sorted(downloads.rglob("*.py")) if downloads.is_dir() else []:
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if WORK_ITEM.search(line):
                found.append(f"{path.relative_to(site)}:{line_no}: {line.strip()}")
    assert not found, ("internal work-item references (say what the page is about "
                       "instead):\n" + "\n".join(found))


def _navigation(site, bs4):
    """Pages the site's navigation (furo's sidebar: the whole toctree) links to."""
    index = site / "index.html"
    tree = parse(bs4, index).select_one(".sidebar-tree")
    assert tree is not None, "index.html has no .sidebar-tree: was the theme changed?"
    linked = {}
    for a in tree.select("a[href]"):
        href = urlsplit(a["href"])
        if href.scheme or href.netloc or not href.path:
            continue
        target = (index.parent / href.path).resolve()
        linked[target] = visible_text(a)
    return linked


def test_every_page_is_in_a_toctree(site, bs4):
    """Each page is reachable from the navigation; none is an orphan a search alone finds."""
    linked = _navigation(site, bs4)
    assert len(linked) >= 20, f"only {len(linked)} pages in the navigation"
    root = (site / "index.html").resolve()
    orphans = [page.relative_to(site).as_posix() for page in reader_pages(site)
               if page.resolve() != root and page.resolve() not in linked]
    assert not orphans, "pages in no table of contents:\n" + "\n".join(orphans)


def test_navigation_lists_topics_only(site, bs4):
    """Tool output (sphinx-gallery's execution times) is no topic of the sidebar."""
    tool_pages = {target.relative_to(site.resolve()).as_posix(): title
                  for target, title in _navigation(site, bs4).items()
                  if "sg_execution_times" in target.name or "computation times" in title.lower()}
    assert not tool_pages, f"tool output in the navigation: {tool_pages}"


def test_no_markup_shown_as_text(site, bs4):
    """No markup left as text in prose: reStructuredText roles and literals (a docstring
    paragraph numpydoc misread), or a Markdown code span cut by a table's ``|``."""
    leaked = []
    for page in reader_pages(site):
        article = parse(bs4, page).select_one("article")
        if article is None:
            continue
        for node in article.select("pre, code, .math, .highlight"):
            node.decompose()
        text = visible_text(article)
        for match in re.finditer(r":[a-z]+:`|``|`", text):
            leaked.append(f"{page.relative_to(site)}: ..."
                          f"{text[max(0, match.start() - 60):match.end() + 40]}...")
    assert not leaked, "markup shown as text:\n" + "\n".join(leaked[:40])


def test_tables_render_as_tables(site, bs4):
    """No Markdown table shows up as a paragraph of pipes (a stray comment or '|' in a cell)."""
    broken = []
    for page in reader_pages(site):
        for para in parse(bs4, page).select("article p"):
            text = visible_text(para)
            if text.startswith("|") and text.count("|") >= 4:
                broken.append(f"{page.relative_to(site)}: {text[:100]}")
    assert not broken, "tables rendered as text:\n" + "\n".join(broken)


def test_math_is_served_by_the_site(site, bs4):
    """Pages with formulas load MathJax from the site itself; no page loads anything remote."""
    with_math, remote, missing_files = 0, [], []
    for page in reader_pages(site):
        soup = parse(bs4, page)
        name = page.relative_to(site).as_posix()
        for tag, attr in (("script", "src"), ("link", "href"), ("img", "src")):
            for node in soup.find_all(tag, **{attr: True}):
                url = urlsplit(node[attr])
                if tag == "link" and "stylesheet" not in (node.get("rel") or []):
                    continue
                if url.scheme in ("http", "https") or node[attr].startswith("//"):
                    remote.append(f"{name}: <{tag} {attr}={node[attr]!r}>")
        if not soup.select(".math"):
            continue
        with_math += 1
        scripts = [s["src"] for s in soup.find_all("script", src=True) if "mathjax" in s["src"].lower()]
        if not scripts:
            missing_files.append(f"{name}: formulas but no MathJax script")
        for src in scripts:
            if not urlsplit(src).scheme and not (page.parent / urlsplit(src).path).is_file():
                missing_files.append(f"{name}: {src} is not in the site")
    assert with_math >= 3, f"only {with_math} pages with formulas: is the math extension on?"
    assert not remote, "pages that need the network:\n" + "\n".join(sorted(set(remote))[:40])
    assert not missing_files, "\n".join(missing_files[:40])
    fonts = site / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert fonts.is_dir() and any(fonts.iterdir()), f"MathJax's fonts are missing: {fonts}"


def test_wine_example_shows_feature_importances(site, bs4):
    page = site / "auto_examples" / "plot_ism_wine.html"
    text = visible_text(parse(bs4, page))
    assert "feature_importances_" in text
    assert "np.linalg.norm(W" not in text, "the example computes its own weights again"


def _machine_paths():
    """Absolute paths that belong to one machine: this checkout, the home folder, the
    Python installation, and the usual roots of user and work folders."""
    own = {str(ROOT), str(ROOT.parent), str(Path.home()), sys.prefix, sys.base_prefix}
    own = sorted((p for p in own if p.count(os.sep) >= 2), key=len, reverse=True)
    generic = (r"(?<![\w.~-])/(?:home|Users|root|work|mnt|srv|scratch)/[^\s\"'<>]+"
               r"|(?<!\w)[A-Za-z]:\\(?:Users|home)\\[^\s\"'<>]+"
               r"|[^\s\"'<>]*site-packages[/\\][^\s\"'<>]*")
    return re.compile("|".join([re.escape(p) + r"[^\s\"'<>]*" for p in own] + [generic]))


def test_no_absolute_machine_paths(site, bs4):
    """No page shows where it was built or measured: no path of a checkout, a home folder
    or a Python installation, in the text, the links, or the downloadable examples."""
    pattern, found = _machine_paths(), []
    for page in reader_pages(site):
        soup = parse(bs4, page)
        name = page.relative_to(site).as_posix()
        for tag in soup.find_all(href=True) + soup.find_all(src=True):
            for attr in ("href", "src"):
                if tag.get(attr) and pattern.search(tag[attr]):
                    found.append(f"{name}: <{tag.name} {attr}={tag[attr]!r}>")
        for match in pattern.finditer(visible_text(soup)):
            found.append(f"{name}: {match.group(0)!r}")
    downloads = site / "_downloads"
    for path in sorted(downloads.rglob("*")) if downloads.is_dir() else []:
        if path.suffix in (".py", ".ipynb"):
            for match in pattern.finditer(path.read_text(encoding="utf-8")):
                found.append(f"{path.relative_to(site)}: {match.group(0)!r}")
    assert not found, "machine paths in the site:\n" + "\n".join(sorted(set(found))[:40])


#: talk of how and where a page was written: branches, commits, work sessions. Hex words
#: of 7 to 40 characters with a digit and a letter are commit hashes.
WORKSHOP_TALK = re.compile(
    r"\b(?:on|in|from|of) (?:the |a |this )?(?:git )?branch(?:es)?\b"
    r"|\bbranch(?:es)? [\w./-]*\d"
    r"|\bcommits? (?:hash(?:es)? )?`?[0-9a-f]{7,40}\b"
    r"|(?<![\w.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])"
    r"|\b(?:from|on) main\b(?! \w)"
    r"|\b(?:built|compiled|cross-compiled|tested|measured|run|ran|written) here\b"
    r"|\b(?:for|by|to) the lead\b|\bthe lead's\b"
    r"|\b(?:this|other|another|earlier|later) (?:work )?sessions?\b"
    r"|\bthe machine (?:where|on which) (?:this|it) was\b"
    r"|\blocal (?:package )?lists?\b",
    re.IGNORECASE)


def test_no_branch_or_commit_talk(site, bs4):
    """Pages describe the product and how to reproduce a figure, never the branch, the
    commit, the session or the machine where they were written."""
    found = []
    for page in reader_pages(site):
        article = parse(bs4, page).select_one("article")
        if article is None:
            continue
        text = visible_text(article)
        for match in WORKSHOP_TALK.finditer(text):
            context = text[max(0, match.start() - 60):match.end() + 40]
            found.append(f"{page.relative_to(site)}: ...{context}...")
    assert not found, "workshop talk in the pages:\n" + "\n".join(found[:40])


#: a page of this site named by its source file instead of linked
SOURCE_OF_A_PAGE = re.compile(r"(?<![\w/.-])(?:docs|benchmarks/results|studies/results)/[\w/]+\.md\b")


def test_pages_are_linked_not_named_by_their_files(site, bs4):
    """Prose and the API reference link another page of the site; they do not cite its
    file in the repository (``docs/cpm.md``), which a reader of the site cannot open.
    Commands that write a results file keep its path."""
    found = []
    for page in reader_pages(site):
        article = parse(bs4, page).select_one("article")
        if article is None:
            continue
        for node in article.select("pre, .highlight"):
            node.decompose()
        for code in article.select("code"):
            if re.search(r"\bpython\b|--\w", visible_text(code)):    # a command line
                code.decompose()
        text = visible_text(article)
        for match in SOURCE_OF_A_PAGE.finditer(text):
            found.append(f"{page.relative_to(site)}: ..."
                         f"{text[max(0, match.start() - 50):match.end() + 20]}...")
    assert not found, "pages named by their files instead of linked:\n" + "\n".join(found[:40])


def test_every_gallery_page_shows_its_output(site, bs4):
    """Each gallery example ran when the site was built: it has its figure, and its
    printed output does not say it skipped itself."""
    scripts = sorted((ROOT / "docs" / "gallery").glob("plot_*.py"))
    assert scripts, "no gallery scripts"
    empty = []
    for script in scripts:
        page = site / "auto_examples" / f"{script.stem}.html"
        if not page.is_file():
            empty.append(f"{script.name}: no page")
            continue
        article = parse(bs4, page).select_one("article")
        figures = article.select("img.sphx-glr-single-img, img.sphx-glr-multi-img")
        printed = " ".join(visible_text(out) for out in article.select(".sphx-glr-script-out"))
        if not figures:
            empty.append(f"{script.name}: no figure")
        if re.search(r"\bskipp(?:ed|ing)\b|\bnot found\b|\bnot available\b", printed, re.I):
            empty.append(f"{script.name}: its output says {printed[:120]!r}")
    assert not empty, "gallery pages without their output:\n" + "\n".join(empty)


# -- in a browser ----------------------------------------------------------------------------

# page, text its <title> and <h1> must contain, whether it shows formulas
BROWSER_PAGES = [
    ("index.html", "ikdr", True),
    ("api/index.html", "API reference", True),
    ("auto_examples/plot_ism_wine.html", "Which wine features matter", True),
]


@pytest.fixture(scope="module")
def chromium():
    for name in filter(None, (os.environ.get("IKDR_CHROMIUM"), "chromium", "chromium-browser",
                              "google-chrome", "google-chrome-stable", "chrome")):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium: install it (apt-get install chromium) or set IKDR_CHROMIUM to "
                "a Chrome or Chromium binary to run the browser checks")


def _run_chromium(chromium, profile, url, *args):
    """Headless Chromium with every host name unresolvable: the page gets no network."""
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--mute-audio", f"--user-data-dir={profile}",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,1100",
           "--virtual-time-budget=15000", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def _is_blank(png):
    from PIL import Image

    with Image.open(png) as image:
        grey = image.convert("L")
        histogram = grey.histogram()
        pixels = grey.width * grey.height
    levels = sum(1 for count in histogram if count)
    return max(histogram) > 0.985 * pixels or levels < 8


@pytest.mark.parametrize("page, title, has_math", BROWSER_PAGES)
def test_page_renders_in_chromium(site, bs4, chromium, page, title, has_math):
    pytest.importorskip("PIL", reason="Pillow is not installed (matplotlib installs it): "
                                      "pip install '.[docs]'")
    keep = os.environ.get("IKDR_DOCS_OUT")
    shots = Path(keep) / "screenshots" if keep else site.parent / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    png = shots / (page.replace("/", "_").replace(".html", "") + ".png")
    png.unlink(missing_ok=True)
    url = (site / page).resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="ikdr-chromium-") as profile:
        shot = _run_chromium(chromium, profile, url, f"--screenshot={png}")
        assert png.is_file(), f"no screenshot of {page}: {shot.stderr[-2000:]}"
        dom = _run_chromium(chromium, profile, url, "--dump-dom")
    assert not _is_blank(png), f"{png} is blank"
    assert dom.returncode == 0 and dom.stdout.strip(), dom.stderr[-2000:]
    soup = bs4.BeautifulSoup(dom.stdout, "html.parser")
    assert soup.title is not None and title in soup.title.get_text(), soup.title
    heading = soup.select_one("article h1") or soup.find("h1")
    assert heading is not None and heading.get_text().strip().startswith(title), heading
    if has_math:
        # MathJax ran without a network: formulas are typeset, none left as \( ... \)
        assert soup.find("mjx-container") is not None, f"{page}: MathJax typeset nothing"
        raw = [m.get_text()[:60] for m in soup.select(".math")
               if m.find("mjx-container") is None]
        assert not raw, f"{page}: formulas left as source: {raw[:5]}"


#: Injected into a copy of a page: once the page has loaded (MathJax included), the width
#: of every table in the article against the text column, and the box that scrolls it.
_MEASURE_TABLES = """
<script>
window.addEventListener("load", function () { setTimeout(function () {
  var article = document.querySelector("article");
  var style = getComputedStyle(article);
  var column = article.clientWidth - parseFloat(style.paddingLeft)
               - parseFloat(style.paddingRight);
  var left = article.getBoundingClientRect().left + parseFloat(style.paddingLeft);
  var tables = [];
  article.querySelectorAll("table").forEach(function (table, i) {
    var box = table.getBoundingClientRect(), scroller = null;
    for (var e = table.parentElement; e && e !== article; e = e.parentElement) {
      if (getComputedStyle(e).overflowX !== "visible") { scroller = e; break; }
    }
    var s = scroller && scroller.getBoundingClientRect();
    tables.push({index: i, width: box.width,
                 head: (table.querySelector("tr") || table).textContent
                       .replace(/\\s+/g, " ").trim().slice(0, 60),
                 scroller: scroller && {overflow: getComputedStyle(scroller).overflowX,
                                        left: s.left - left, width: s.width}});
  });
  var out = document.createElement("pre");
  out.id = "ikdr-table-widths";
  out.textContent = JSON.stringify({column: column, tables: tables,
      page_width: document.documentElement.scrollWidth, window: window.innerWidth});
  document.body.appendChild(out);
}, 200); });
</script>
"""


def _table_widths(chromium, profile, page):
    """The measurements of ``_MEASURE_TABLES`` for one page, at a 1280-pixel window."""
    copy = page.with_name("_measure_" + page.name)     # beside it: the same relative links
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", _MEASURE_TABLES
                                                             + "</body>"), encoding="utf-8")
    try:
        dom = _run_chromium(chromium, profile, copy.resolve().as_uri(), "--dump-dom")
    finally:
        copy.unlink()
    match = re.search(r'<pre id="ikdr-table-widths">(.*?)</pre>', dom.stdout, re.DOTALL)
    assert match, f"{page.name}: the measuring script did not run: {dom.stderr[-1000:]}"
    return json.loads(html.unescape(match.group(1)))


#: results pages whose many-column tables fit the column whole at 1280 pixels (the
#: smaller font and tighter cells of docs/_static/ikdr.css): none of their columns hides
#: behind the scroll box's edge
FIT_WHOLE = {"benchmarks/ism_vs_numpy.html", "benchmarks/table4.html"}


def test_tables_fit_their_column(site, bs4, chromium):
    """At a 1280-pixel wide window no table is wider than the text column unless it
    scrolls inside a box that fits the column (wide benchmark tables scroll, with a
    shadow at the edge that hides columns); no page is wider than the window."""
    pages = [page for page in reader_pages(site)
             if (article := parse(bs4, page).select_one("article")) and article.find("table")]
    assert len(pages) >= 10, f"only {len(pages)} pages with tables"
    cut = []
    with tempfile.TemporaryDirectory(prefix="ikdr-chromium-") as profile:
        for page in pages:
            name = page.relative_to(site).as_posix()
            m = _table_widths(chromium, profile, page)
            if m["page_width"] > m["window"]:
                cut.append(f"{name}: the page is {m['page_width']} px wide in a "
                           f"{m['window']} px window")
            for t in m["tables"]:
                box = t["scroller"]
                if t["width"] <= m["column"] + 1:
                    continue
                if name in FIT_WHOLE:
                    cut.append(f"{name}: table {t['index']} is {t['width']:.0f} px wide in a "
                               f"{m['column']:.0f} px column: it should fit without scrolling")
                    continue
                if (box and box["overflow"] in ("auto", "scroll") and box["left"] >= -1
                        and box["left"] + box["width"] <= m["column"] + 1):
                    continue
                where = (f"its {box['overflow']} box spans {box['left']:.0f}.."
                         f"{box['left'] + box['width']:.0f} px" if box else "nothing scrolls it")
                cut.append(f"{name}: table {t['index']} ({t['head']!r}) is {t['width']:.0f} px "
                           f"wide in a {m['column']:.0f} px column and {where}")
    assert not cut, "tables cut off or spilling out of the text column:\n" + "\n".join(cut)
