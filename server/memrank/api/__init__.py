"""The wire API as Python: validation, conversion in and out, encoding, one call through them."""
