"""A LongMemEval-shaped retrieval set from a seeded generator: personas, dated multi-turn sessions,
and questions of seven kinds, each with its gold evidence turns. Same seed, same set (no downloads).

Two kinds are built to discriminate: ``dated`` asks about one of three look-alike events by the day
it happened (only the session date tells them apart), and ``knowledge_update`` states the old fact
in the very words of the question (a lexical trap; ``Question.trap`` names those turns)."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

KINDS = (
    "single_session",
    "multi_session",
    "knowledge_update",
    "temporal",
    "dated",
    "preference",
    "abstention",
)
BASE_DATE = dt.date(2025, 1, 6)
SPAN_DAYS = 180
DAY_MS = 86_400_000


def _w(text: str, sep: str | None = None) -> tuple[str, ...]:
    """Words of a literal (keeps long vocabularies readable)."""
    return tuple(text.split(sep))


FIRST_NAMES = _w(
    "Maya Jonas Priya Tomás Aiko Lena Omar Sofia Felix Nadia Ravi Clara Mateo Ingrid Kofi Yara "
    "Elias Hana Bruno Leila"
)
PET_NAMES = _w("Biscuit Pepper Mochi Juniper Waffles Ziggy Clementine Otis Nori Pickles Luna Rufus")
CITIES = _w(
    (
        "Lisbon|Rotterdam|Montreal|Osaka|Valencia|Leipzig|Porto|Gothenburg|Edinburgh|Ljubljana|Tallinn|"
        "Bologna"
    ),
    "|",
)
PLACES = _w(
    (
        "Kyoto|the Dolomites|Marrakech|Iceland|the Scottish Highlands|Crete|Patagonia|Vietnam|Cornwall|"
        "Sicily|the Faroe Islands|Quebec City|Seville|Bali"
    ),
    "|",
)
COMPANIES = _w(
    "Globex|Initech|Umbrella Health|Northwind|Vandelay Imports|Hooli|Stark Logistics|Acme Robotics",
    "|",
)
JOBS = _w(
    (
        "product designer|data analyst|backend engineer|project manager|UX researcher|nurse|"
        "high-school teacher|financial controller"
    ),
    "|",
)
BOOKS = _w(
    (
        "The Left Hand of Darkness|Piranesi|The Overstory|Station Eleven|Klara and the Sun|"
        "The Remains of the Day|Circe|A Gentleman in Moscow|Project Hail Mary|The Name of the Rose"
    ),
    "|",
)
BANDS = _w(
    (
        "Khruangbin|Arctic Monkeys|Fleet Foxes|Bonobo|Hiatus Kaiyote|Phoebe Bridgers|Radiohead|Tame Impala"
    ),
    "|",
)
FOODS = _w("pasta|rice|lentils|potatoes|eggs|quinoa|broccoli|salmon|chickpeas|oats", "|")
LANGS = _w("Python|TypeScript|Go|Rust|Kotlin", "|")


# -- templates ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Fact:
    """A fact a user states (``says``), how it is later asked about (``asks``), and look-alikes about
    someone else (``near``) that make the haystack harder."""

    key: str
    values: Callable[[random.Random], dict[str, str]]
    says: tuple[str, ...]
    asks: tuple[str, ...]
    answer: str
    ack: tuple[str, ...] = ()
    near: tuple[str, ...] = ()


def _pick(pool: tuple[str, ...] | list[str]) -> Callable[[random.Random], str]:
    return lambda r: r.choice(pool)


SINGLE = (
    Fact(
        "pet",
        lambda r: {
            "kind": r.choice(("puppy", "kitten", "rabbit", "parrot")),
            "name": r.choice(PET_NAMES),
        },
        (
            "By the way, we adopted a {kind} last weekend and named it {name}.",
            "Small life update: there's a {kind} in the house now. We call it {name}.",
        ),
        (
            "What is the name of the {kind} we adopted?",
            "What did we end up calling our new {kind}?",
        ),
        "{name}",
        ("Congratulations! {name} sounds adorable.", "A new {kind}, how exciting. Enjoy {name}!"),
        ("My neighbour's {kind} {other} kept me awake all night again.",),
    ),
    Fact(
        "car",
        lambda r: {
            "car": r.choice(
                ("Skoda Octavia", "Toyota Corolla", "Mazda 3", "Volvo V60", "Kia Niro")
            ),
            "color": r.choice(("dark green", "silver", "red", "navy blue")),
        },
        (
            "I finally bought a car: a used {color} {car} with only 40,000 km on it.",
            "Picked up my first car today, a {color} {car}!",
        ),
        ("Which car did I end up buying?", "What model and colour is my car?"),
        "{color} {car}",
        ("Nice choice, the {car} is a reliable car.",),
        ("My brother-in-law is thinking about buying a {car} too.",),
    ),
    Fact(
        "sister_job",
        lambda r: {"sib": r.choice(FIRST_NAMES), "sjob": r.choice(JOBS)},
        (
            "My sister {sib} just started working as a {sjob}, she is thrilled.",
            "Family news: {sib}, my younger sister, got hired as a {sjob}.",
        ),
        ("What does my sister do for a living?", "What job did my sister get?"),
        "{sjob}",
        ("Please pass on my congratulations to {sib}!",),
        ("A friend of mine is looking for work as a {sjob}.",),
    ),
    Fact(
        "allergy",
        lambda r: {
            "allergen": r.choice(("hazelnuts", "shellfish", "penicillin", "birch pollen", "sesame"))
        },
        (
            "The allergist confirmed it: I'm allergic to {allergen}.",
            "Turns out my rash was an allergy to {allergen}, according to the test results.",
        ),
        ("What am I allergic to?", "What did my allergy test show?"),
        "{allergen}",
        ("Good to know, I'll keep {allergen} in mind when suggesting anything.",),
        ("My coworker is allergic to cats, so the office stays pet-free.",),
    ),
    Fact(
        "gym",
        lambda r: {"gym": r.choice(("Boulder Barn", "The Crux", "Granite Works", "Vertical Lab"))},
        (
            "I signed up at a bouldering gym called {gym}, two evenings a week.",
            "New hobby: climbing! I joined {gym}, the bouldering gym near the station.",
        ),
        ("What is the name of the climbing gym I joined?", "Where do I go bouldering?"),
        "{gym}",
        ("Climbing is a great full-body workout. Have fun at {gym}!",),
        ("My cousin goes to a different gym that has a sauna.",),
    ),
    Fact(
        "teacher",
        lambda r: {
            "teacher": r.choice(FIRST_NAMES),
            "instr": r.choice(("cello", "piano", "guitar")),
        },
        (
            "My {instr} teacher is called {teacher}; she is strict but very patient.",
            "Had my {instr} lesson with {teacher} again, she's an amazing teacher.",
        ),
        ("What's the name of my {instr} teacher?", "Who teaches me {instr}?"),
        "{teacher}",
        ("Great teachers make all the difference.",),
        ("My nephew wants to learn the {instr} as well.",),
    ),
    Fact(
        "anniversary",
        lambda r: {
            "month": r.choice(("March", "June", "September", "November")),
            "day": str(r.randint(2, 27)),
        },
        (
            "Our wedding anniversary is on {month} {day}, I must not forget it this year.",
            "Reminder for myself: {month} {day} is our anniversary.",
        ),
        ("When is my wedding anniversary?", "What date is our anniversary?"),
        "{month} {day}",
        ("Noted! Maybe plan something special.",),
        ("My parents celebrate their anniversary in spring.",),
    ),
    Fact(
        "commute",
        lambda r: {
            "mins": str(r.choice((25, 35, 45, 55))),
            "mode": r.choice(("tram", "bike", "ferry")),
        },
        (
            "My commute is about {mins} minutes each way by {mode}.",
            "I take the {mode} to the office, roughly {mins} minutes door to door.",
        ),
        ("How long is my commute, and how do I get to work?", "How do I commute to the office?"),
        "{mins} minutes by {mode}",
        ("That's a decent commute, good time for podcasts.",),
        ("A colleague drives in and complains about traffic every day.",),
    ),
)

UPDATES = (
    (
        "job",
        lambda r: {
            "job1": r.choice(JOBS),
            "co1": r.choice(COMPANIES),
            "job2": r.choice(JOBS),
            "co2": r.choice(COMPANIES),
        },
        "My current job: I work as a {job1} at {co1}, mostly from home.",
        "Big news: I left {co1} and started as a {job2} at {co2} this week.",
        ("Where do I work now, and what is my role?", "What is my current job?"),
        "{job2} at {co2}",
    ),
    (
        "city",
        lambda r: {"city1": r.choice(CITIES), "city2": r.choice(CITIES)},
        "At the moment we live in {city1}, these days in a small flat close to the river.",
        "We finally moved, we live in {city2} now and the boxes are everywhere.",
        ("Which city do I live in at the moment?", "Where am I living these days?"),
        "{city2}",
    ),
    (
        "pb",
        lambda r: {
            "t1": f"{r.randint(27, 31)}:{r.randint(10, 59)}",
            "t2": f"{r.randint(24, 26)}:{r.randint(10, 59)}",
        },
        "My current 5k personal best is {t1}, I'd love to get faster.",
        "New 5k personal best this morning: {t2}!",
        ("What is my current 5k personal best?", "What's my best 5k time so far?"),
        "{t2}",
    ),
    (
        "yoga",
        lambda r: {
            "d1": r.choice(("Monday", "Tuesday", "Wednesday")),
            "d2": r.choice(("Thursday", "Friday", "Saturday")),
        },
        "My yoga class is every {d1} evening at the community centre.",
        "I switched my yoga class from {d1} to {d2}, it fits better with work.",
        ("Which day do I do yoga now?", "When is my yoga class?"),
        "{d2}",
    ),
    (
        "phone",
        lambda r: {
            "ph1": r.choice(("an old iPhone 11", "a Pixel 5")),
            "ph2": r.choice(("a Fairphone 5", "a Galaxy S24")),
        },
        "The phone I use at the moment is {ph1}, the battery barely lasts a day.",
        "I replaced my phone, I have {ph2} now and the battery is great.",
        ("What phone do I use now?", "Which phone do I have at the moment?"),
        "{ph2}",
    ),
)

MULTI = (
    (
        "trips",
        lambda r: r.choice(PLACES),
        "I just got back from a week in {x}, still sorting the photos.",
        (
            "Which places have I travelled to, and how many trips was that?",
            "How many trips did I tell you about?",
        ),
    ),
    (
        "books",
        lambda r: r.choice(BOOKS),
        "I finished reading {x} last night, what an ending.",
        (
            "How many books have I finished, and which ones?",
            "Which novels have I completed reading?",
        ),
    ),
    (
        "concerts",
        lambda r: r.choice(BANDS),
        "Saw {x} live yesterday, the concert was incredible.",
        ("Which concerts have I been to?", "What live shows did I attend?"),
    ),
    (
        "repairs",
        lambda r: r.choice(
            (
                "the boiler",
                "the roof gutter",
                "the washing machine",
                "a leaking tap",
                "the garage door",
            )
        ),
        "Ugh, I had to pay a repairman to fix {x} today.",
        ("What did I have to get repaired at home?", "List the home repairs I paid for."),
    ),
)

TEMPORAL = (
    (
        "lessons",
        lambda r: {"skill": r.choice(("driving", "sailing", "scuba diving"))},
        "Today I had my very first {skill} lesson, I was so nervous.",
        "I passed my {skill} exam today!",
        ("How many weeks passed between my first {skill} lesson and passing the {skill} exam?",),
    ),
    (
        "garden",
        lambda r: {"plant": r.choice(("tomato", "zucchini", "pepper"))},
        "I planted {plant} seedlings on the balcony today.",
        "Picked the first ripe {plant} from the balcony this morning.",
        ("How long after planting the {plant} seedlings did I pick the first ripe one?",),
    ),
    (
        "medication",
        lambda r: {"cond": r.choice(("migraine", "back pain", "insomnia"))},
        "The doctor put me on a new medication for my {cond} starting today.",
        "I stopped the {cond} medication today, the doctor said I no longer need it.",
        ("For how many days was I taking the {cond} medication?",),
    ),
    (
        "project",
        lambda r: {"proj": r.choice(("kitchen renovation", "podcast", "quilt"))},
        "Kicked off my {proj} project today, wish me luck.",
        "The {proj} is finally done, finished it today.",
        ("How long did my {proj} take from start to finish?",),
    ),
)

#: one kind of event on three different days; the question names the day ("dated")
DATED = (
    (
        "interview",
        _pick(COMPANIES),
        "Had a job interview at {x} today, fingers crossed.",
        "Which company did I have a job interview with on {day}?",
    ),
    (
        "dinner",
        _pick(FOODS),
        "Cooked a new {x} recipe for dinner tonight.",
        "What did I cook a new recipe with on {day}?",
    ),
    (
        "tutorial",
        _pick(LANGS),
        "Started an online {x} tutorial this evening.",
        "Which programming language did I start a tutorial for on {day}?",
    ),
    (
        "dog",
        _pick(PET_NAMES),
        "Walked my neighbour's dog {x} this afternoon, such a sweetheart.",
        "What was the name of the dog I walked on {day}?",
    ),
)

PREFERENCES = (
    (
        "diet",
        lambda r: {"dislike": r.choice(("mushrooms", "cilantro", "olives", "eggplant"))},
        "Just so you know, I'm vegetarian and I really can't stand {dislike}.",
        (
            "Can you suggest something I could cook for dinner tonight?",
            "Any ideas for a quick weeknight meal for me?",
        ),
    ),
    (
        "flights",
        lambda r: {"city": r.choice(CITIES)},
        "When I fly I always want an aisle seat, and I refuse to take red-eye flights.",
        (
            "Help me choose a flight to {city} next month.",
            "I need to book a trip to {city}, what should I pick?",
        ),
    ),
    (
        "movies",
        lambda r: {"genre": r.choice(("science fiction", "Korean thriller", "slow-burn drama"))},
        "I love {genre} films, but please never recommend horror to me.",
        ("What should I watch this evening?", "Recommend a film for my Friday night."),
    ),
    (
        "workouts",
        lambda r: {},
        "I'm a morning person, I only like to exercise before work, never in the evening.",
        ("Could you draft a weekly training plan for me?", "Plan my workouts for next week."),
    ),
    (
        "code_style",
        lambda r: {"lang": r.choice(LANGS)},
        "When you show me code, I prefer {lang} with type hints and very short examples.",
        ("How do I read a CSV file and sum one column?", "Show me how to parse a JSON file."),
    ),
    (
        "music",
        lambda r: {"g2": r.choice(("lo-fi beats", "baroque music", "ambient electronica"))},
        "For focus I only listen to {g2}, nothing with lyrics.",
        (
            "Can you recommend something to listen to while studying?",
            "What music should I put on for deep work?",
        ),
    ),
)

FILLER_TOPICS: dict[str, tuple[tuple[str, str], ...]] = {
    "cooking": (
        (
            "How long should I boil {food}?",
            "For {food}, check the packet, but usually 8 to 12 minutes works.",
        ),
        (
            "Can I freeze cooked {food}?",
            "Yes, cool it quickly and freeze it in portions for up to three months.",
        ),
        (
            "What spices go well with {food}?",
            "Cumin, smoked paprika and a little lemon zest work nicely.",
        ),
        (
            "Is it ok to cook {food} the night before?",
            "Sure, store it covered in the fridge and reheat gently.",
        ),
    ),
    "coding": (
        (
            "Why does my {lang} script throw a KeyError on line 42?",
            "The key is missing from the dict; use .get() or check membership first.",
        ),
        (
            "How do I write a unit test in {lang}?",
            "Create a test function, call the code and assert on the result.",
        ),
        (
            "What's the difference between a list and a tuple in {lang}?",
            "Lists are mutable, tuples are immutable and hashable.",
        ),
        (
            "My {lang} build is slow, any tips?",
            "Cache dependencies, run tests in parallel and profile the slow step.",
        ),
    ),
    "travel": (
        (
            "What are good things to see in {place}?",
            "Walk the old town, try the local market and book a day trip.",
        ),
        (
            "Do I need a visa for {place}?",
            "It depends on your passport; check the official government site.",
        ),
        (
            "What should I pack for {place} in autumn?",
            "Layers, a rain jacket and comfortable walking shoes.",
        ),
    ),
    "finance": (
        (
            "Should I pay off my credit card first or save?",
            "Clear high-interest debt first, then build an emergency fund.",
        ),
        (
            "What is an index fund?",
            "A fund that tracks a market index, with low fees and broad diversification.",
        ),
        (
            "How much should I keep in an emergency fund?",
            "Three to six months of essential expenses is a common rule.",
        ),
    ),
    "gardening": (
        (
            "How often should I water basil?",
            "Keep the soil moist but not soggy, about every two days in summer.",
        ),
        (
            "Why are my plant leaves turning yellow?",
            "Often overwatering or a lack of nitrogen; check the drainage.",
        ),
        ("When should I repot a succulent?", "In spring, when the roots fill the pot."),
    ),
    "writing": (
        (
            "Can you help me write a polite reminder email to a client?",
            "Sure: keep it short, restate the request and give a date.",
        ),
        (
            "How do I decline a meeting politely?",
            "Thank them, say you can't attend and offer an alternative.",
        ),
        (
            "Proofread this sentence: 'their going to the office tomorow'.",
            "It should be: 'They're going to the office tomorrow.'",
        ),
    ),
    "tech": (
        (
            "My laptop fan is very loud, what can I do?",
            "Clean the vents, check for runaway processes and update the BIOS.",
        ),
        (
            "How do I back up my phone photos?",
            "Turn on cloud backup or copy them to an external drive regularly.",
        ),
        (
            "Is it worth upgrading to 32 GB of RAM?",
            "Only if you run heavy workloads like VMs or large datasets.",
        ),
    ),
    "movies": (
        (
            "Is the new Dune film worth seeing in the cinema?",
            "Yes, the sound and visuals are made for a big screen.",
        ),
        (
            "Why do people like horror movies so much?",
            "The safe thrill: fear in a setting where nothing can hurt you.",
        ),
        ("Who directed Parasite?", "Bong Joon-ho directed it; it won the Oscar for best picture."),
    ),
    "dinner": (
        (
            "What's a good side dish for grilled fish?",
            "Roasted potatoes or a fresh fennel salad go well with it.",
        ),
        (
            "How do I make a creamy sauce without cream?",
            "Blend cashews or use a roux with milk and some stock.",
        ),
        (
            "Can you give me a shopping list for a week of lunches?",
            "Rice, beans, greens, eggs, yoghurt, fruit and bread.",
        ),
    ),
    "flights": (
        (
            "Why are flights cheaper on Tuesdays?",
            "Demand is lower midweek, so airlines discount seats.",
        ),
        (
            "How early should I arrive for an international flight?",
            "About three hours before departure is safe.",
        ),
        (
            "What can I bring in hand luggage?",
            "Liquids up to 100 ml each in a clear bag; no sharp tools.",
        ),
    ),
    "pets": (
        (
            "How often should a puppy be fed?",
            "Three to four small meals a day until about six months.",
        ),
        (
            "Why does my friend's cat knock things off the table?",
            "Curiosity and attention seeking; it's normal play.",
        ),
        (
            "What vaccinations does a rabbit need?",
            "Myxomatosis and RHD vaccines, boosted every year.",
        ),
    ),
    "career": (
        (
            "How do I ask for a raise?",
            "Collect your results, pick a good moment and name a number.",
        ),
        ("Should I put hobbies on my CV?", "Only if they show skills relevant to the job."),
        ("How long should a cover letter be?", "One page: three or four short paragraphs."),
    ),
    "health": (
        (
            "How much water should I drink a day?",
            "Roughly two litres, more when it's hot or you exercise.",
        ),
        (
            "Any tips for sleeping better?",
            "Keep a regular schedule, dim the lights and avoid screens late.",
        ),
        (
            "Is stretching before running useful?",
            "Dynamic warm-ups help more than static stretching before a run.",
        ),
    ),
}


# -- the set ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Turn:
    key: str
    user: str
    assistant: str
    ts: int


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    persona: str
    date: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    persona: str
    kind: str
    text: str
    answer: str
    gold: tuple[str, ...]
    ts: int
    #: turns that look like the answer but are not (the superseded fact of a knowledge update)
    trap: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Persona:
    id: str
    name: str


@dataclass(frozen=True)
class LongMemSet:
    seed: int
    personas: tuple[Persona, ...]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    def turns(self) -> list[tuple[Session, Turn]]:
        return [(s, t) for s in self.sessions for t in s.turns]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def fingerprint(self) -> str:
        blob = json.dumps(self.as_dict(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


def _day_ms(day: dt.date, rng: random.Random) -> int:
    start = dt.datetime(day.year, day.month, day.day, 8, tzinfo=dt.UTC)
    return int(start.timestamp() * 1000) + rng.randint(0, 12 * 3_600_000)


def _distinct(rng: random.Random, make: Callable[[random.Random], str], n: int) -> list[str]:
    out: list[str] = []
    for _ in range(200):
        v = make(rng)
        if v not in out:
            out.append(v)
        if len(out) == n:
            return out
    raise ValueError("value pool too small")


class _Builder:
    """Places statements into a persona's dated sessions and writes the questions."""

    def __init__(self, rng: random.Random, pid: str, n_sessions: int) -> None:
        self.rng = rng
        self.pid = pid
        days = sorted(
            rng.sample(range(SPAN_DAYS), n_sessions)
            if n_sessions <= SPAN_DAYS
            else rng.choices(range(SPAN_DAYS), k=n_sessions)
        )
        self.days = [BASE_DATE + dt.timedelta(days=d) for d in days]
        #: session index -> list of (user, assistant, tag); tag "ev:<qid>" marks evidence
        self.slots: list[list[tuple[str, str, str]]] = [[] for _ in range(n_sessions)]

    def place(self, session: int, user: str, assistant: str, tag: str) -> None:
        self.slots[session].append((user, assistant, tag))

    def sessions_ordered(self, n: int, min_gap: int = 1) -> list[int]:
        """``n`` increasing session indices, at least ``min_gap`` apart."""
        total = len(self.slots)
        span = (n - 1) * min_gap
        if span >= total:
            raise ValueError("not enough sessions for the requested evidence")
        for _ in range(500):
            picks = sorted(self.rng.sample(range(total), n))
            if all(b - a >= min_gap for a, b in itertools.pairwise(picks)):
                return picks
        first = self.rng.randrange(total - span)
        return [first + i * min_gap for i in range(n)]

    def build(self, persona: Persona) -> list[Session]:
        out: list[Session] = []
        topics = sorted(FILLER_TOPICS)
        for i, day in enumerate(self.days):
            rng = self.rng
            topic = rng.choice(topics)
            bank = FILLER_TOPICS[topic]
            n_turns = rng.randint(5, 9)
            filler = []
            for _ in range(max(0, n_turns - len(self.slots[i]))):
                u, a = rng.choice(bank)
                vals = {
                    "food": rng.choice(FOODS),
                    "lang": rng.choice(LANGS),
                    "place": rng.choice(PLACES),
                }
                filler.append((u.format(**vals), a.format(**vals), "filler"))
            items = filler[:]
            for ev in self.slots[i]:
                items.insert(rng.randint(0, len(items)), ev)
            ts = _day_ms(day, rng)
            turns = []
            for j, (u, a, _tag) in enumerate(items):
                ts += rng.randint(40_000, 240_000)
                turns.append(Turn(f"{self.pid}/s{i:03d}/t{j:02d}", u, a, ts))
            out.append(Session(f"{self.pid}-s{i:03d}", persona.id, day.isoformat(), tuple(turns)))
        return out


def generate(
    seed: int = 7, personas: int = 3, sessions_per_persona: int = 12, questions_per_kind: int = 2
) -> LongMemSet:
    """The whole set. Questions per kind and persona must not exceed the template pools (4)."""
    if questions_per_kind > 4:
        raise ValueError("questions_per_kind must be at most 4")
    rng = random.Random(seed)
    names = rng.sample(FIRST_NAMES, personas)
    people = tuple(Persona(f"p{i}", names[i]) for i in range(personas))
    sessions: list[Session] = []
    questions: list[Question] = []
    asked_day = BASE_DATE + dt.timedelta(days=SPAN_DAYS + 2)
    for person in people:
        b = _Builder(rng, person.id, sessions_per_persona)
        pending: list[tuple[str, str, str, str, list[str]]] = []  # qid, kind, text, answer, tags
        pid = person.id

        def qid(kind: str, pid: str = pid, pending: list[Any] = pending) -> str:
            return f"{pid}-q{len(pending) + 1:02d}-{kind}"

        single = rng.sample(range(len(SINGLE)), min(len(SINGLE), 2 * questions_per_kind))
        stated, absent = single[:questions_per_kind], single[questions_per_kind:]
        for idx in stated:
            f = SINGLE[idx]
            v = f.values(rng)
            other = rng.choice([n for n in PET_NAMES + FIRST_NAMES if n not in v.values()])
            q = qid("single_session")
            s = rng.randrange(len(b.slots))
            b.place(
                s, rng.choice(f.says).format(**v), rng.choice(f.ack or ("Noted!",)).format(**v), q
            )
            for near in f.near:
                b.place(
                    rng.randrange(len(b.slots)),
                    near.format(other=other, **v),
                    "Oh no, that sounds annoying.",
                    "near",
                )
            pending.append(
                (q, "single_session", rng.choice(f.asks).format(**v), f.answer.format(**v), [q])
            )
        for idx in absent:  # asked about, never stated; a look-alike about someone else may exist
            f = SINGLE[idx]
            v = f.values(rng)
            other = rng.choice(FIRST_NAMES)
            for near in f.near:
                b.place(
                    rng.randrange(len(b.slots)),
                    near.format(other=other, **v),
                    "I see, thanks for sharing.",
                    "near",
                )
            q = qid("abstention")
            pending.append((q, "abstention", rng.choice(f.asks).format(**v), "(not mentioned)", []))
        for key, make, old, new, asks, answer in rng.sample(UPDATES, questions_per_kind):
            v = make(rng)
            for _ in range(20):  # the update must change the value
                if all(
                    v[a] != v[b2]
                    for a, b2 in (("job1", "job2"), ("co1", "co2"), ("city1", "city2"))
                    if a in v
                ):
                    break
                v = make(rng)
            q = qid("knowledge_update")
            s_old, s_new = b.sessions_ordered(2, min_gap=2)
            b.place(s_old, old.format(**v), "Thanks, good to know.", f"{q}:old")
            b.place(s_new, new.format(**v), "Congratulations on the change!", q)
            pending.append(
                (q, "knowledge_update", rng.choice(asks).format(**v), answer.format(**v), [q])
            )
            _ = key
        for _key, make_x, says, asks in rng.sample(MULTI, questions_per_kind):
            xs = _distinct(rng, make_x, 3)
            q = qid("multi_session")
            for s, x in zip(b.sessions_ordered(3), xs, strict=True):
                b.place(s, says.format(x=x), "Sounds wonderful, tell me more!", q)
            pending.append(
                (q, "multi_session", rng.choice(asks), f"{len(xs)}: " + ", ".join(xs), [q])
            )
        for _key, make, first, second, asks in rng.sample(TEMPORAL, questions_per_kind):
            v = make(rng)
            q = qid("temporal")
            s1, s2 = b.sessions_ordered(2, min_gap=2)
            b.place(s1, first.format(**v), "Good luck, keep me posted!", q)
            b.place(s2, second.format(**v), "That's great news!", q)
            gap = (b.days[s2] - b.days[s1]).days
            pending.append((q, "temporal", rng.choice(asks).format(**v), f"{gap} days", [q]))
        for _key, make_x, says, ask in rng.sample(DATED, questions_per_kind):
            xs = _distinct(rng, make_x, 3)
            q = qid("dated")
            picks = b.sessions_ordered(3)
            target = rng.randrange(3)
            for i, (s, x) in enumerate(zip(picks, xs, strict=True)):
                b.place(
                    s, says.format(x=x), "Sounds like a good day!", q if i == target else "near"
                )
            day = b.days[picks[target]]
            when = (
                f"{day:%B} {day.day}, {day.year}"
                if rng.random() < 0.5
                else f"{day.day} {day:%B} {day.year}"
            )
            pending.append((q, "dated", ask.format(day=when), xs[target], [q]))
        for _key, make, says, asks in rng.sample(PREFERENCES, questions_per_kind):
            v = make(rng)
            q = qid("preference")
            b.place(rng.randrange(len(b.slots)), says.format(**v), "Got it, I'll remember that.", q)
            pending.append((q, "preference", rng.choice(asks).format(**v), says.format(**v), [q]))
        built = b.build(person)
        sessions.extend(built)
        gold_of: dict[str, list[str]] = {}
        trap_of: dict[str, list[str]] = {}
        for sess, slot in zip(built, b.slots, strict=True):
            for turn in sess.turns:
                for u, _a, tag in slot:
                    if turn.user != u or tag in ("near", "filler"):
                        continue
                    if tag.endswith(":old"):
                        trap_of.setdefault(tag[: -len(":old")], []).append(turn.key)
                    else:
                        gold_of.setdefault(tag, []).append(turn.key)
        asked_ts = _day_ms(asked_day, rng)
        for q, kind, text, answer, tags in pending:
            gold = tuple(sorted({k for t in tags for k in gold_of.get(t, [])}))
            trap = tuple(sorted({k for t in tags for k in trap_of.get(t, [])}))
            questions.append(Question(q, person.id, kind, text, answer, gold, asked_ts, trap))
    meta = {
        "personas": personas,
        "sessions_per_persona": sessions_per_persona,
        "questions_per_kind": questions_per_kind,
    }
    return LongMemSet(seed, people, tuple(sessions), tuple(questions), meta)


def conversation_stream(seed: int, n: int) -> list[tuple[str, str, str]]:
    """``n`` realistic (session, user, assistant) turns for soak and capture runs: filler topics and
    stated facts, eight turns per session, each user text made unique by a running number."""
    rng = random.Random(seed)
    topics = sorted(FILLER_TOPICS)
    out: list[tuple[str, str, str]] = []
    facts = [*SINGLE]
    for i in range(n):
        sid = f"soak-{seed}-{i // 8:05d}"
        if rng.random() < 0.2:
            f = rng.choice(facts)
            v = f.values(rng)
            user = rng.choice(f.says).format(**v)
            agent = rng.choice(f.ack or ("Noted!",)).format(**v)
        else:
            u, a = rng.choice(FILLER_TOPICS[rng.choice(topics)])
            vals = {
                "food": rng.choice(FOODS),
                "lang": rng.choice(LANGS),
                "place": rng.choice(PLACES),
            }
            user, agent = u.format(**vals), a.format(**vals)
        out.append((sid, f"{user} (note {i})", agent))
    return out
