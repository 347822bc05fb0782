"""memrank behind LangChain's ContextualCompressionRetriever, on a small in-memory store (fake embeddings: no
model, no network). Needs a running sidecar (memrank serve) and `pip install '.[langchain]' langchain-classic`.

    python examples/frameworks/langchain_compressor.py
"""

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

TURNS = [  # one conversation: each turn with its thread, position and speaker (the context and speaker signals)
    ("t0", "Caroline", "I keep thinking about a trip this summer."),
    ("t1", "Melanie", "Where would you go? Lisbon or Porto?"),
    ("t2", "Caroline", "I decided on Lisbon, the trip is booked for July."),
    ("t3", "Melanie", "Lisbon in July will be hot, take a hat."),
    ("t4", "Caroline", "I painted a sunrise over the lake last weekend."),
    ("t5", "Melanie", "My kids love the pottery class on Tuesdays."),
]
vector_store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
vector_store.add_documents([
    Document(id=i, page_content=f"{who}: {text}", metadata={"thread": "s1", "position": n, "speaker": who})
    for n, (i, who, text) in enumerate(TURNS)])

# --8<-- [start:memrank]
from langchain_classic.retrievers import ContextualCompressionRetriever
from memrank.integrations.langchain import MemrankCompressor

memrank = MemrankCompressor(target="localhost:50051", top_n=5)
retriever = ContextualCompressionRetriever(base_compressor=memrank, base_retriever=vector_store.as_retriever())
docs = retriever.invoke("what did Caroline decide about the trip?")  # docs[0].metadata["memrank"]["signals"]
# --8<-- [end:memrank]

for d in docs:
    print(d.metadata["memrank"]["rank"], d.id, d.page_content)
