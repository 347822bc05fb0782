"""The options the pydantic-based adapters (LangChain's compressor, LlamaIndex's postprocessor) share, as
pydantic fields, and the connection they open from them. Imported by those two only: pydantic comes with their
frameworks, not with memrank."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr

from memrank.client.aio import AsyncRankingClient
from memrank.client.sync import RankingClient
from memrank.integrations.connection import Connection
from memrank.integrations.mapping import MetadataKeys, ScoreMode


class AdapterOptions(BaseModel):
    """``target`` or ``client`` / ``async_client``, ``token``, ``timeout``, ``top_n``, ``profile``, ``scores``,
    ``keys`` and ``request``, as each adapter's docstring says; ``close()`` closes what ``target`` opened."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    target: str | None = None
    client: RankingClient | None = Field(default=None, exclude=True)
    async_client: AsyncRankingClient | None = Field(default=None, exclude=True)
    token: SecretStr | None = None
    timeout: float = 5.0
    top_n: int | None = None
    profile: str | None = None
    scores: ScoreMode = "auto"
    keys: MetadataKeys = Field(default_factory=MetadataKeys)
    request: dict[str, Any] = Field(default_factory=dict)
    _connection: Connection = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        token = self.token.get_secret_value() if self.token is not None else None
        self._connection = Connection(self.target, self.client, self.async_client, timeout=self.timeout,
                                      token=token)

    def close(self) -> None:
        """Close the channel opened for ``target`` (a given client is left open)."""
        self._connection.close()
