"""Streamlit entry installed with the package; `golden serve` runs this file."""

from app_pages.entry import main

main()
