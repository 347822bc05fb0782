"""What more than one test folder uses: servers (in-process and `memrank serve`), certificates, hostile
requests, the reference formulas ported by hand, batch builders, the evaluation fixtures, helm helpers; and
the pytest plugin with the shared fixtures. A test imports from here or from its own folder, never from
another test folder (tests/unit/test_test_imports.py checks it)."""
