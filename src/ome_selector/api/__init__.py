"""The wire shape of the five ``ome.io/v1beta1`` kinds: frozen pydantic models (``resources``), loading with
CRD defaults (``loading``), and the one strict manifest reader (``manifests``).

Import the modules directly; this package re-exports nothing, so that a module that needs only a small part
(the model-file child process reads ``jsonbounds``) does not pay for building every pydantic model.
"""
