"""memrank as a Haystack 2.x ranker component after a BM25 retriever, on an in-memory document store.
Needs a running sidecar (memrank serve) and `pip install '.[haystack]'`.

    python examples/frameworks/haystack_ranker.py
"""

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # Haystack reports usage unless told not to

from haystack import Document, Pipeline  # noqa: E402
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever  # noqa: E402
from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: E402

TURNS = [  # one conversation: each turn with its thread, position and speaker (the context and speaker signals)
    ("t0", "Caroline", "I keep thinking about a trip this summer."),
    ("t1", "Melanie", "Where would you go? Lisbon or Porto?"),
    ("t2", "Caroline", "I decided on Lisbon, the trip is booked for July."),
    ("t3", "Melanie", "Lisbon in July will be hot, take a hat."),
    ("t4", "Caroline", "I painted a sunrise over the lake last weekend."),
    ("t5", "Melanie", "My kids love the pottery class on Tuesdays."),
]
document_store = InMemoryDocumentStore()
document_store.write_documents([Document(id=i, content=f"{who}: {text}",
                                         meta={"thread": "s1", "position": n, "speaker": who})
                                for n, (i, who, text) in enumerate(TURNS)])

# --8<-- [start:memrank]
from memrank.integrations.haystack import MemrankRanker

pipe = Pipeline()
pipe.add_component("retriever", InMemoryBM25Retriever(document_store, top_k=50))
pipe.add_component("memrank", MemrankRanker(target="localhost:50051", top_k=5))
pipe.connect("retriever.documents", "memrank.documents")
q = "what did Caroline decide about the trip?"
docs = pipe.run({"retriever": {"query": q}, "memrank": {"query": q}})["memrank"]["documents"]
# --8<-- [end:memrank]

for d in docs:
    print(d.meta["memrank"]["rank"], d.id, d.content)
