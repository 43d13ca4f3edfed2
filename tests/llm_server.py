"""The local Messages-API server tests talk to (the real SDK code path, through base_url,
without the network). It lives in the package (``annotator.judge.llm_standin``) so that
``golden llm-standin`` can start it for people trying the LLM features without a key;
tests import it from here as before and script its answers."""

from annotator.judge.llm_standin import MessagesServer, Responder, batch_object, message, standin_answer

__all__ = ["MessagesServer", "Responder", "batch_object", "message", "standin_answer"]
