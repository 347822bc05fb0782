"""The wire API as Python: validation, conversion in and out, encoding, receipt verification."""
