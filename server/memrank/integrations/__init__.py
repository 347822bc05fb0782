"""Framework adapters: LangChain (``.langchain``), LlamaIndex (``.llamaindex``), Haystack 2.x (``.haystack``).

Each adapter module imports its framework (install ``memrank[langchain]``,
``memrank[llamaindex]`` or ``memrank[haystack]``); this package imports none.
All three share one mapping of documents to candidates (``.mapping``) and one
asyncio client (``.aio``).
"""

from memrank.client.aio import AsyncRankingClient
from memrank.integrations.mapping import MappingError, MetadataKeys, ScoreMode

__all__ = ["AsyncRankingClient", "MappingError", "MetadataKeys", "ScoreMode"]
