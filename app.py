"""Streamlit entry for `streamlit run app.py` (and AppTest); the app lives in app_pages/."""

from app_pages.entry import main

main()
