"""The project's test, demo and chart harness: never packaged, never imported by ``src/``.

A local control plane (etcd + kube-apiserver), the operator run in a thread or a process, object builders,
the Helm renderer behind ``make manifests``, ``make demo`` and the end-to-end scenario. Run its entry points
from the repository root: ``python -m harness.demo``, ``python -m harness.controlplane up|down``,
``python -m harness.chart`` and ``python -m harness.scenario``.
"""
