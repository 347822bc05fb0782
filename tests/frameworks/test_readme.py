"""The README's integration examples, extracted from README.md and run as written against a live server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from haystack import Document as HaystackDocument
from haystack.document_stores.in_memory import InMemoryDocumentStore
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode

from tests.frameworks.conftest import CORPUS

README = Path(__file__).resolve().parents[2] / "README.md"
PLACEHOLDER = "localhost:50051"


def example(heading: str) -> str:
    """The first python block after ``#### <heading>`` in the README's Clients and integrations section."""
    text = README.read_text()
    section = text[text.index("\n## Clients and integrations\n"):]
    section = section[section.index(f"\n#### {heading}\n"):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"no python block under {heading}"
    code = match.group(1)
    assert PLACEHOLDER in code
    return code


def _run(heading: str, target: str, **given: object) -> dict[str, object]:
    namespace: dict[str, object] = dict(given)
    exec(compile(example(heading).replace(PLACEHOLDER, target), f"README.md ({heading})", "exec"), namespace)
    return namespace


def _ranks(values: list[int]) -> None:
    assert values == list(range(1, len(values) + 1)), "best first: ranks 1, 2, ... in placement order"


@pytest.mark.parametrize("heading", ["LangChain", "LlamaIndex", "Haystack"])
def test_examples_are_short(heading: str) -> None:
    code = [line for line in example(heading).splitlines()
            if line.strip() and not line.startswith(("from ", "import "))]
    assert len(code) <= 7, code


def test_langchain_example(target: str) -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents([Document(page_content=text, metadata=dict(meta), id=i) for i, text, meta in CORPUS])
    docs = _run("LangChain", target, vector_store=store)["docs"]
    assert isinstance(docs, list) and 0 < len(docs) <= 4  # as_retriever() returns 4
    _ranks([d.metadata["memrank"]["rank"] for d in docs])
    assert all(d.metadata["memrank"]["signals"] for d in docs)


def test_llamaindex_example(target: str) -> None:
    index = VectorStoreIndex([TextNode(text=text, id_=i, metadata=dict(meta)) for i, text, meta in CORPUS],
                             embed_model=MockEmbedding(embed_dim=8))
    nodes = _run("LlamaIndex", target, index=index)["nodes"]
    assert isinstance(nodes, list) and 0 < len(nodes) <= 5
    _ranks([n.node.metadata["memrank"]["rank"] for n in nodes])
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


def test_haystack_example(target: str) -> None:
    store = InMemoryDocumentStore()
    store.write_documents([HaystackDocument(id=i, content=text, meta=dict(meta)) for i, text, meta in CORPUS])
    docs = _run("Haystack", target, document_store=store)["docs"]
    assert isinstance(docs, list) and 0 < len(docs) <= 5
    _ranks([d.meta["memrank"]["rank"] for d in docs])
    assert "t2" in [d.id for d in docs], "the turn where Caroline decides on the trip"
