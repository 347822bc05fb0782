"""The suite's shared fixtures come from one plugin; shared helpers are imported from tests.support."""

pytest_plugins = ("tests.support.plugin",)
