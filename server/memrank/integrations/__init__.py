"""Framework adapters: LangChain (``.langchain``), LlamaIndex (``.llamaindex``), Haystack 2.x (``.haystack``).

Each adapter module imports its framework (install ``memrank[langchain]``,
``memrank[llamaindex]`` or ``memrank[haystack]``); this package imports none.
All three share one mapping of documents to candidates (``.mapping``, sent as
``RankRequest.columns``) and one way to the sidecar (``.connection``); LangChain's
and LlamaIndex's share their pydantic options (``.options``).
"""

from memrank.client.aio import AsyncRankingClient
from memrank.integrations.mapping import MappingError, MetadataKeys, ScoreMode

__all__ = ["AsyncRankingClient", "MappingError", "MetadataKeys", "ScoreMode"]
