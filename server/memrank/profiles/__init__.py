"""Profiles as data: the built-in ones (``builtin``), and a profile read from or written as config data
(``model``: ``profile_from_mapping`` names the key and the value of anything wrong)."""
