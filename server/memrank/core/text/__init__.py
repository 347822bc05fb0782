"""Text: what the signals read of a memory's words.

In: strings (contents, the query). Out: bounded samples and tokens (``words``), word hashes
(``hashing``), a batch's word indexes (``index``, built once per batch by ``buffers``), and phrase and
pattern matchers over them (``phrases``).
"""
