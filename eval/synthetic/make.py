"""Write the bundled synthetic evaluation set: made-up conversations, labelled questions, pseudo-embeddings.

    python eval/synthetic/make.py            # (re)write conversations.jsonl and embeddings.npz next to this file
    python eval/synthetic/make.py --check    # exit 1 if the committed files differ from what it writes

Everything here is invented by this script (no LoCoMo or LongMemEval text): pairs of made-up people talk over
six sessions; some turns state facts about the speaker (a pet, a job, a move and a later change of plans, a
club, a trip and the present packed for it, a favourite dish), the rest is small talk and look-alike remarks
about third parties. Every question names the turns that answer it, in LoCoMo's categories (1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop, 5 adversarial: asks about the other speaker, evidence is the turn it
confuses). The output is the JSON-lines form `memrank eval --data` reads (server/memrank/evaluation/data.py)
and the .npz `--embeddings` reads.

Embeddings are not a model's: each text is a bag of lowercased words (stop words dropped, a crude plural
strip), each word first mapped to a concept of a small synonym table (puppy -> dog, flat -> home, ...), and
each concept given a fixed pseudo-random direction in 64 dimensions (the bytes of its BLAKE2b digest). A text's
vector is the unit-norm sum of its concepts' directions, stored as float16. So dense retrieval sees through the
synonyms that BM25 misses, and misses what a real model would get; the numbers this set gives are a check that
the pipeline runs and behaves, not a measure of ranking quality.

The output is byte-for-byte deterministic: a seeded random.Random, no clocks, and the .npz written with fixed
zip timestamps.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import random
import re
import sys
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from memrank.evaluation.data import embedding_arrays

HERE = Path(__file__).resolve().parent
DATA = "conversations.jsonl"
EMBEDDINGS = "embeddings.npz"
SEED = 20260
CONVERSATIONS = 6
SESSIONS = 6
TURNS_PER_SESSION = 12
DIM = 64

PEOPLE = ("Avelin", "Brisco", "Calder", "Dunya", "Elsbet", "Faro", "Gisla", "Hollis", "Iver", "Jolanda", "Kasimir",
          "Liesl", "Marten", "Noor", "Osric", "Pernille", "Quill", "Roswita", "Saskia", "Tobin")
ANIMALS = (("dog", "puppy"), ("cat", "kitten"), ("rabbit", "bunny"), ("parrot", "bird"), ("tortoise", "reptile"))
PET_NAMES = ("Pepper", "Biscuit", "Marlowe", "Tansy", "Juniper", "Clementine", "Otto", "Fennel", "Nimbus", "Wren")
JOBS = (("nurse", "the Eastgate clinic"), ("carpenter", "Holm and Sons"), ("translator", "Lindqvist Media"),
        ("baker", "the Corner Loaf"), ("surveyor", "Brackwater Council"), ("pilot", "Northline Air"),
        ("librarian", "the Almsworth library"), ("mechanic", "Ferrow Motors"))
CITIES = ("Lisbon", "Tallinn", "Ghent", "Bergen", "Porto", "Krakow", "Utrecht", "Galway", "Trieste", "Aarhus")
HOBBIES = ("chess", "choir", "climbing", "pottery", "rowing", "salsa", "archery", "birdwatching")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
PLACES = ("Reykjavik", "Marrakesh", "Kyoto", "Valparaiso", "Tbilisi", "Hobart", "Quebec", "Zanzibar")
RELATIVES = ("grandmother", "uncle", "sister", "godfather", "aunt", "cousin")
GIFTS = ("a wool blanket", "a jar of cloudberry jam", "a telescope", "a pair of hiking boots", "a watercolour set",
         "an old vinyl record")
DISHES = ("mushroom risotto", "lentil soup", "fish tacos", "dumplings", "paella", "banana bread", "ramen")

# Words that mean the same to the pseudo-embedding (BM25 does not know them).
CONCEPTS = {
    "puppy": "dog", "kitten": "cat", "bunny": "rabbit", "bird": "parrot", "reptile": "tortoise", "pet": "animal",
    "called": "name", "named": "name", "adopted": "pet", "shelter": "pet",
    "flat": "home", "house": "home", "apartment": "home", "lease": "home", "live": "home", "settled": "home",
    "buying": "home", "moving": "move", "moved": "move",
    "job": "work", "working": "work", "role": "work", "offer": "work", "position": "work", "start": "begin",
    "club": "group", "meets": "group", "class": "group", "lesson": "group", "busy": "schedule", "free": "schedule",
    "evening": "schedule", "dinner": "schedule",
    "flying": "trip", "travel": "trip", "visit": "trip", "visiting": "trip", "journey": "trip",
    "packed": "bring", "bringing": "bring", "present": "gift", "gift": "gift",
    "cook": "food", "cooking": "food", "dish": "food", "recipe": "food", "make": "food", "meal": "food",
}
STOP = frozenset((
    "a", "an", "the", "and", "or", "of", "on", "in", "at", "to", "is", "are", "was", "be", "did", "do", "does", "i",
    "my", "me", "you", "your", "it", "its", "with", "for", "what", "who", "when", "where", "which", "why", "how",
    "there", "their", "them", "they", "so", "now", "from", "too", "we", "our", "us", "that", "this", "s", "has",
    "have", "had", "will", "would", "just", "about", "up", "as", "but", "if", "again", "some", "all", "very",
))

SMALL_TALK = (
    "How has your week been?", "Ha, that made me laugh.", "Same here, honestly.", "Sounds like a plan.",
    "I have been sleeping badly with all this rain.", "Did you watch the match on Saturday?",
    "The bakery near me finally reopened.", "I need a proper holiday soon.", "Work has been hectic this month.",
    "Let us catch up properly next time.", "I repainted the hallway, it took forever.", "That is good to hear.",
    "My phone screen cracked again.", "We had friends over for board games.", "It snowed here, can you believe it?",
    "I started reading a long novel about sailors.", "The neighbours are renovating, so it is noisy.",
    "I finally fixed the squeaky door.", "Talk soon!", "Take care of yourself.", "Oh wow, really?",
    "I am glad it worked out.", "The garden is full of weeds after the storm.", "I tried a new running route.",
)
LOOK_ALIKES = (  # remarks with a fact's words about somebody else: distractors for both retrievers
    "My neighbour's {animal} barks at every delivery van.", "A friend of mine works as a {job}, she loves it.",
    "{city} is lovely in spring, we should go some day.", "My {relative} keeps sending me recipes for {dish}.",
    "I saw a documentary about {place} last night.", "Somebody at work just adopted a {animal} too.",
    "There is a {hobby} group in my street but I never went.", "My colleague is moving to {city} next year.",
    "I once bought {gift} for a friend, a bit of a disaster.", "The shop downstairs sells frozen {dish}.",
)
REPLIES = ("Oh, congratulations!", "That is lovely news.", "Wow, tell me more next time.", "Good for you!",
           "I did not see that coming.", "That sounds exciting.")


def pick(rng: random.Random, pool: tuple[str, ...] | tuple[tuple[str, str], ...]) -> object:
    return pool[rng.randrange(len(pool))]


class Fact:
    """A statement turn (and its later follow-up, if any) with its questions."""

    def __init__(self, owner: str, topic: str, lines: list[tuple[int, str]],
                 questions: list[tuple[str, int, list[int], str]]) -> None:
        self.owner, self.topic = owner, topic
        self.lines = lines  # (session, text); turn ids are filled in when placed
        self.questions = questions  # (question, category, indexes into lines, answer)
        self.ids: list[str] = []


def facts_for(rng: random.Random, me: str, other: str, topics: list[str]) -> list[Fact]:
    """The facts of one speaker, sessions chosen so that follow-ups come later."""
    out = []
    for topic in topics:
        s = rng.randint(1, SESSIONS - 2)
        later = rng.randint(s + 1, SESSIONS)
        if topic == "pet":
            animal, syn = pick(rng, ANIMALS)  # type: ignore[misc]
            name = pick(rng, PET_NAMES)
            qs = [(f"What is the name of {me}'s {animal}?", 4, [0], str(name)),
                  (f"What is the name of {other}'s {animal}?", 5, [0], "")]
            out.append(Fact(me, topic, [(s, f"We adopted a {syn} from the shelter and called it {name}.")], qs))
        elif topic == "job":
            job, company = pick(rng, JOBS)  # type: ignore[misc]
            qs = [(f"When did {me} say they would start working at {company}?", 2, [0], ""),
                  (f"What is {me}'s new profession?", 4, [0], str(job))]
            out.append(Fact(me, topic, [(s, f"Big news: next month I begin as a {job} at {company}.")], qs))
        elif topic == "home":
            first, second = rng.sample(CITIES, 2)
            qs = [(f"Which city does {me} live in now?", 4, [1], second),
                  (f"Where did {me} first plan to move before changing plans?", 1, [0, 1], first)]
            out.append(Fact(me, topic, [(s, f"We signed the lease on a flat in {first}."),
                                        (later, f"Change of plans: we ended up buying a house in {second} instead.")],
                            qs))
        elif topic == "hobby":
            hobby, day = pick(rng, HOBBIES), pick(rng, WEEKDAYS)
            qs = [(f"Would {me} be free for dinner on a {day} evening?", 3, [0], f"no, {hobby} that day"),
                  (f"Which club did {me} join?", 4, [0], str(hobby))]
            out.append(Fact(me, topic, [(s, f"I joined a {hobby} club that meets every {day}.")], qs))
        elif topic == "trip":
            place, relative, gift = pick(rng, PLACES), pick(rng, RELATIVES), pick(rng, GIFTS)
            qs = [(f"What is {me} bringing on the trip to {place}?", 1, [0, 1], str(gift)),
                  (f"Who is {me} going to see in {place}?", 4, [0], f"their {relative}")]
            out.append(Fact(me, topic, [(s, f"In the summer I am flying to {place} to see my {relative}."),
                                        (later, f"I packed {gift} for my {relative}, it was on their wish list.")],
                            qs))
        elif topic == "food":
            dish = pick(rng, DISHES)
            qs = [(f"What meal does {me} like to make at weekends?", 4, [0], str(dish))]
            out.append(Fact(me, topic, [(s, f"Lately I cook {dish} almost every Sunday.")], qs))
    return out


def look_alike(rng: random.Random) -> str:
    return str(pick(rng, LOOK_ALIKES)).format(
        animal=pick(rng, ANIMALS)[0], job=pick(rng, JOBS)[0], city=pick(rng, CITIES),  # type: ignore[index]
        relative=pick(rng, RELATIVES), dish=pick(rng, DISHES), place=pick(rng, PLACES), hobby=pick(rng, HOBBIES),
        gift=pick(rng, GIFTS))


def conversation(rng: random.Random, index: int, start: datetime) -> dict[str, object]:
    """One conversation in the form `memrank eval --data` reads."""
    a, b = rng.sample(PEOPLE, 2)
    topics = ["pet", "job", "home", "hobby", "trip", "food"]
    mine = rng.sample(topics, 4)
    theirs = rng.sample([t for t in topics if t != "pet"] if "pet" in mine else topics, 3)
    facts = facts_for(rng, a, b, mine) + facts_for(rng, b, a, theirs)
    # Adversarial questions only where the other speaker really has no such fact.
    for f in facts:
        other_has = any(g.owner != f.owner and g.topic == f.topic for g in facts)
        f.questions = [q for q in f.questions if q[1] != 5 or not other_has]
    turns: list[dict[str, object]] = []
    sessions = []
    when = start
    dates: dict[int, datetime] = {}
    for s in range(1, SESSIONS + 1):
        when += timedelta(days=rng.randint(9, 40))
        stamp = f"{when:%Y-%m-%d}T{rng.randint(8, 21):02d}:{rng.choice((0, 15, 30, 45)):02d}:00"
        dates[s] = when
        stated = [(f, i) for f in facts for i, (fs, _) in enumerate(f.lines) if fs == s]
        # Blocks: a fact's statement with a reply, or one line of small talk or a look-alike; shuffled.
        blocks: list[tuple[Fact, int] | None] = [*stated] + [None] * max(2, TURNS_PER_SESSION - 2 * len(stated))
        rng.shuffle(blocks)
        speaker = rng.choice((a, b))
        lines: list[tuple[str, str, tuple[Fact, int] | None]] = []
        for block in blocks:
            if block is not None:
                fact, i = block
                lines.append((fact.owner, fact.lines[i][1], block))
                speaker = b if fact.owner == a else a
                lines.append((speaker, str(pick(rng, REPLIES)), None))
            else:
                text = look_alike(rng) if rng.random() < 0.35 else str(pick(rng, SMALL_TALK))
                lines.append((speaker, text, None))
            speaker = b if speaker == a else a
        for k, (who, text, origin) in enumerate(lines, 1):
            tid = f"D{s}:{k}"
            if origin is not None:
                origin[0].ids.append(tid)
            turns.append({"id": tid, "session": s, "timestamp": stamp, "speaker": who, "text": text})
        sessions.append({"session": s, "date_time": stamp, "timestamp": stamp, "n_turns": len(lines)})
    questions = []
    for f in facts:
        for text, category, which, answer in f.questions:
            if category == 2:  # "next month", said in the evidence turn's session
                said = dates[int(f.ids[which[0]][1:].split(":")[0])]
                answer = f"{(said.replace(day=1) + timedelta(days=32)):%B %Y}"
            questions.append({"question": text, "answer": answer or None, "category": category,
                              "evidence": [f.ids[i] for i in which]})
    return {"conversation_id": f"synth-{index:02d}", "speakers": [a, b], "sessions": sessions, "turns": turns,
            "questions": questions}


def conversations() -> list[dict[str, object]]:
    rng = random.Random(SEED)
    return [conversation(rng, i, datetime(2025, 1, 6) + timedelta(days=11 * i))
            for i in range(1, CONVERSATIONS + 1)]


_WORD = re.compile(r"[a-z0-9]+")


def concepts(text: str) -> list[str]:
    """The concepts of a text: lowercased words minus stop words, plural-stripped, through CONCEPTS."""
    out = []
    for w in _WORD.findall(text.lower()):
        if w in STOP:
            continue
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(CONCEPTS.get(w, w))
    return out


def direction(concept: str) -> np.ndarray:
    """A fixed pseudo-random direction of a concept: its BLAKE2b digest's bytes, centred."""
    digest = hashlib.blake2b(concept.encode(), digest_size=DIM).digest()
    return (np.frombuffer(digest, dtype=np.uint8).astype(np.float64) - 127.5) / 127.5


def embed(text: str) -> np.ndarray:
    """Unit-norm sum of the text's concept directions (float64)."""
    v = np.zeros(DIM)
    for c in concepts(text):
        v += direction(c)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    """An .npz (what np.savez writes) with fixed timestamps, so equal arrays give equal bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, arr in arrays.items():
            one = io.BytesIO()
            np.lib.format.write_array(one, arr, allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, one.getvalue())
    return buf.getvalue()


def build() -> dict[str, bytes]:
    """The two files' contents."""
    convs = conversations()
    data = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in convs).encode()
    arrays = embedding_arrays(convs, embed)
    npz = _npz({
        "turn_ids": arrays["turn_ids"], "turn_emb": arrays["turn_emb"].astype(np.float16),
        "question_keys": arrays["question_keys"], "question_emb": arrays["question_emb"].astype(np.float16),
        "model": np.array([f"synthetic concept-hash bag of words, {DIM} dims, float16 (eval/synthetic/make.py)"]),
    })
    return {DATA: data, EMBEDDINGS: npz}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--out", type=Path, default=HERE, help="folder to write to (default: next to this script)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if the files in --out differ")
    args = p.parse_args(argv)
    files = build()
    if args.check:
        stale = [n for n, b in files.items() if not (args.out / n).is_file() or (args.out / n).read_bytes() != b]
        if stale:
            print(f"{', '.join(stale)} out of date: run python eval/synthetic/make.py", file=sys.stderr)
            return 1
        print(f"{', '.join(files)} in {args.out} are up to date")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (args.out / name).write_bytes(content)
        print(f"wrote {args.out / name} ({len(content):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
