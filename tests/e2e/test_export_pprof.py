"""test_export_pprof.py - issue 4's export formats, checked by their real clients
(filled in by the exporters' work)."""

TESTS = []
