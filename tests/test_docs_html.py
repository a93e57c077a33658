"""What a reader sees: checks on the built HTML site, and in a browser where there is one.

A build that passes ``sphinx -W`` can still show a reader a theme's error box
(furo paints one over a ``contents`` list with CSS, so no warning fires), a
summary cut at an abbreviation, a tracker number, a page no menu leads to, or
formulas left as ``\\(XW\\)`` when MathJax cannot be fetched. Each check below
reads the site built once by ``tests/test_docs.py`` (``build_site``).

Runs when the docs extra is installed (``pip install "ikdr[docs]"``), skipped
otherwise. The browser checks need Chromium (``apt-get install chromium``, or
``IKDR_CHROMIUM=/path/to/chrome``) and are skipped without it: screenshots of the
index, the API reference and a gallery page must not be blank and the rendered
page must carry the expected title; MathJax must typeset the formulas with the
network switched off. The screenshots are kept in ``DIR/screenshots`` when
``IKDR_DOCS_OUT=DIR`` is set.
"""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .test_docs import DOCS_UNAVAILABLE, SKIP_REASON, build_site

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
    return pytest.importorskip("bs4")


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
    pytest.skip("no Chromium (apt-get install chromium, or set IKDR_CHROMIUM)")


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
    pytest.importorskip("PIL")
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
