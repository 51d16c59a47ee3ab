"""Sphinx configuration of the lessons' website (built by website/build.py, not by hand).

website/build.py stages the sources (the lessons from notebooks/*.ipynb and a generated home page)
into a folder of its own and runs sphinx-build with this folder as its configuration directory.
Nothing is executed: myst-nb renders the outputs stored in the notebooks.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

REPOSITORY = "https://github.com/shiftvit-tutorial/shiftvit-step-by-step"

project = "ShiftViT, step by step"
author = "ShiftViT tutorial team"
copyright = "the ShiftViT tutorial team, Apache-2.0"

# korean_edition: the Korean pages and the language switch; figure_alt: alt text from a figure's meaning;
# reading: code, tables, numbers and figures as a reader sees them; lesson_footer: ask or report, and
# the stored outputs' run (issue 44); light_pages: page weight (issue 37)
extensions = ["myst_nb", "mathml", "korean_edition", "figure_alt", "reading", "lesson_footer", "light_pages"]

# The stored outputs are the page: never run a notebook.
nb_execution_mode = "off"
nb_merge_streams = True
# myst-nb would load require.js and the widget manager from a CDN for notebooks with widgets; the
# lessons have none, and the site loads nothing from outside.
nb_ipywidgets_js = {}

myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# Math becomes MathML when the site is built (the "mathml" extension, with latex2mathml): browsers
# draw it themselves, so no MathJax from a CDN.
html_math_renderer = "mathml"

html_theme = "sphinx_book_theme"
html_title = "ShiftViT, step by step"
html_static_path = ["_static"]
templates_path = ["_templates"]  # search tools on the search page only; its language switch (issue 37)
html_css_files = ["site.css", "readable.css"]  # readable.css: issue 25 (widths, wrapping)
html_js_files = ["site-fixes.js"]  # copy buttons; search summaries: search-summaries.js (search page)
html_favicon = "_static/favicon.svg"
html_use_index = False  # no index entries: the page would be empty (and its theme script logs an error)
html_copy_source = True  # the theme's download button offers the .ipynb
# pydata-sphinx-theme's colour mode on a first visit; left unset, its script logs a console error
# ("Got invalid theme mode") on the first page a visitor opens.
html_context = {"default_mode": "auto"}
html_theme_options = {
    "repository_url": REPOSITORY,
    "repository_branch": "main",  # the theme's default is "master"
    "path_to_docs": "",  # the lessons are notebooks/<name>.ipynb, as in the repository
    "use_repository_button": True,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "launch_buttons": {
        "colab_url": "https://colab.research.google.com",
        "binderhub_url": "https://mybinder.org",
        "notebook_interface": "jupyterlab",
    },
    "show_navbar_depth": 1,
    "home_page_in_toc": True,
    # sphinx-book-theme 1.4 with pydata-sphinx-theme 0.20 draws a second, empty top bar with a
    # duplicate search field unless this is empty.
    "navbar_persistent": [],
}
