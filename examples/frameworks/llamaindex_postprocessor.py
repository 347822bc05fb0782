"""memrank as a LlamaIndex node postprocessor, on a small in-memory index (mock embeddings: no model, no network).
Needs a running sidecar (memrank serve) and `pip install '.[llamaindex]'`.

    python examples/frameworks/llamaindex_postprocessor.py
"""

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode

TURNS = [  # one conversation: each turn with its thread, position and speaker (the context and speaker signals)
    ("t0", "Caroline", "I keep thinking about a trip this summer."),
    ("t1", "Melanie", "Where would you go? Lisbon or Porto?"),
    ("t2", "Caroline", "I decided on Lisbon, the trip is booked for July."),
    ("t3", "Melanie", "Lisbon in July will be hot, take a hat."),
    ("t4", "Caroline", "I painted a sunrise over the lake last weekend."),
    ("t5", "Melanie", "My kids love the pottery class on Tuesdays."),
]
index = VectorStoreIndex([TextNode(id_=i, text=f"{who}: {text}",
                                   metadata={"thread": "s1", "position": n, "speaker": who})
                          for n, (i, who, text) in enumerate(TURNS)], embed_model=MockEmbedding(embed_dim=8))

# --8<-- [start:memrank]
from memrank.integrations.llamaindex import MemrankPostprocessor

memrank = MemrankPostprocessor(target="localhost:50051", top_n=5)
q = "what did Caroline decide about the trip?"
nodes = memrank.postprocess_nodes(index.as_retriever(similarity_top_k=50).retrieve(q), query_str=q)
# --8<-- [end:memrank]

for n in nodes:
    print(n.node.metadata["memrank"]["rank"], n.node.node_id, round(n.score or 0.0, 4), n.node.get_content())
