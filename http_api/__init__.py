"""The HTTP API (issue 28): FastAPI under ``/api/v1``, a second front door beside the Streamlit
app, in the same layer as ``app_pages``: thin (parse, call ``annotator``, shape the answer),
no SQL, no math. Every endpoint acts as the caller's token's user, so the annotator layer's
role checks apply exactly as in the app. Errors are RFC 9457 problem documents carrying the
same one-sentence messages the app and the CLI show."""
