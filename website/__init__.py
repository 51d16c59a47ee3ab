"""The lessons' website: build.py builds it with Sphinx, check_site.py checks it in Chromium."""
