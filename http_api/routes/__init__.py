"""The API's endpoints by area; each a thin call into ``annotator`` as the caller's token."""
