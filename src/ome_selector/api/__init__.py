"""The wire shape of the five ``ome.io/v1beta1`` kinds: frozen pydantic models (``resources``), loading with
CRD defaults (``loading``), and the one strict manifest reader (``manifests``).

Import the modules directly; this package re-exports nothing, so that importing one small module (``paths``,
``jsonbounds``) does not also build every pydantic model.
"""
