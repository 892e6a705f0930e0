"""Generated sentence-pair tasks: QNLI, SNLI, MNLI, RTE (entailment) and MRPC, QQP (paraphrase)."""

from __future__ import annotations

import random

from repro.data.generated._registry import generates
from repro.data.generated._text import cap as _cap, pick as _pick, sentence as _sentence, weighted as _weighted


# ==============================================================================================================
# QNLI: a question and a sentence that does / does not contain its answer
# ==============================================================================================================
_Q_PREFIX = ("Varna", "Harlow", "Fenwick", "Aldric", "Merrow", "Castell", "Brenton", "Oakridge", "Linden", "Marlow",
             "Tessaly", "Rowan", "Kestrel", "Halden", "Corwin", "Ashby", "Dunmore", "Everly", "Greystone", "Whitby")
_Q_TYPES = ("Bridge", "Abbey", "Canal", "College", "Observatory", "Museum", "Library", "Theatre", "Dam", "Cathedral",
            "Lighthouse", "Opera House", "Town Hall", "Botanical Garden")
_Q_PEOPLE = ("Thomas Hale", "Anna Weiss", "Samuel Okafor", "Margaret Lind", "Henri Dubois", "Clara Novak",
             "James Porter", "Ingrid Holm", "Luis Ortega", "Edith Crane", "Viktor Banerjee", "Rosa Lindqvist")
_Q_TOWNS = ("Eastbrook", "Millford", "Saint Oren", "Kirkwall", "Port Ellis", "Hollins", "Rivenmoor", "Calder",
            "Westmarch", "Norden")
_Q_MATERIALS = ("red sandstone", "local granite", "cast iron", "timber and brick", "white limestone", "reinforced concrete")
_Q_REASONS = ("a fire in the east wing", "a lack of funding", "flood damage", "a dispute over ownership",
              "safety concerns", "the outbreak of war")
_Q_FUNDERS = ("a wealthy wool merchant", "the city council", "public donations", "the national railway company",
              "a local bishop", "a group of factory owners")


def _q_facts(r: random.Random, e: str) -> dict[str, tuple[list[str], list[str]]]:
    """relation → (questions, answering sentences) about entity ``e`` (one random value per relation)."""
    year, year2 = r.randint(1700, 1899), r.randint(1900, 1990)
    person, town = _pick(r, _Q_PEOPLE), _pick(r, _Q_TOWNS)
    n, mat, why, who = r.randint(12, 95), _pick(r, _Q_MATERIALS), _pick(r, _Q_REASONS), _pick(r, _Q_FUNDERS)
    v = r.randint(20, 900)
    return {
        "built": ([f"When was the {e} completed?", f"In what year was the {e} built?", f"When did work on the {e} finish?"],
                  [f"The {e} was completed in {year} after {r.randint(3, 20)} years of work.",
                   f"Construction of the {e} finished in {year}, later than planned.",
                   f"Completed in {year}, the {e} was at the time the largest of its kind in the region.",
                   f"Work on the {e} began in {year - r.randint(2, 9)} and was finished in {year}."]),
        "designer": ([f"Who designed the {e}?", f"Which architect drew up the plans for the {e}?", f"Who was the architect of the {e}?"],
                     [f"The {e} was designed by the architect {person}.",
                      f"{person} drew up the plans for the {e} while still a student.",
                      f"The plans for the {e} were the work of {person}, who also designed several churches."]),
        "location": ([f"Where is the {e} located?", f"In which town is the {e}?", f"Where can the {e} be found?"],
                     [f"The {e} stands in the town of {town}, close to the river.",
                      f"Visitors to {town} can see the {e} from the main square.",
                      f"The {e} is located on the northern edge of {town}."]),
        "size": ([f"How tall is the {e}?", f"What is the height of the {e}?"],
                 [f"The {e} is {n} metres tall at its highest point.",
                  f"At {n} metres, the {e} is the tallest building in the district.",
                  f"The {e} rises to a height of {n} metres."]),
        "material": ([f"What is the {e} made of?", f"What material was used to build the {e}?"],
                     [f"The {e} was built from {mat} brought from a nearby quarry.",
                      f"Builders used {mat} for the walls of the {e}.",
                      f"The {e} is made almost entirely of {mat}."]),
        "closed": ([f"Why was the {e} closed in {year2}?", f"What caused the {e} to close in {year2}?"],
                   [f"The {e} was closed in {year2} because of {why}.",
                    f"In {year2} the {e} had to close after {why}.",
                    f"{_cap(why)} forced the {e} to close its doors in {year2}."]),
        "visitors": ([f"How many people visit the {e} each year?", f"How many visitors does the {e} get a year?"],
                     [f"About {v},000 people visit the {e} every year.",
                      f"The {e} attracts roughly {v},000 visitors a year.",
                      f"Each year around {v},000 tourists come to see the {e}."]),
        "funder": ([f"Who paid for the {e}?", f"Who funded the construction of the {e}?"],
                   [f"The {e} was paid for by {who}.", f"Money for the {e} came from {who}.",
                    f"{_cap(who)} covered the full cost of the {e}."]),
    }


def _q_nonanswer(r: random.Random, e: str, rel: str) -> str:
    """A sentence about the same entity and topic that does not answer a ``rel`` question."""
    return _pick(r, (
        f"The exact date on which the {e} was finished is disputed by historians." if rel == "built" else
        f"Historians still argue about many details of the {e}.",
        f"Records about the {e} were lost in a fire, so little is known about its early years.",
        f"The {e} appears on the town's coat of arms.",
        f"A smaller copy of the {e} was built in a neighbouring town.",
        f"Guided tours of the {e} are offered on weekends during the summer.",
    ))


@generates("QNLI")
def _gen_qnli(r: random.Random, y: int):
    """Question about one fact of a (fictional) building; entailment = the sentence states that fact;
    not_entailment = a sentence about the *same* building giving another fact (often of the same answer type,
    e.g. another year), a fact about a second building, or a topical non-answer."""
    e = f"{_pick(r, _Q_PREFIX)} {_pick(r, _Q_TYPES)}"
    facts = _q_facts(r, e)
    rel = _pick(r, list(facts))
    question = _pick(r, facts[rel][0])
    if y == 0:
        return question, _pick(r, facts[rel][1])
    kind = _weighted(r, {"other_rel": 0.6, "other_entity": 0.25, "nonanswer": 0.15})
    if kind == "other_rel":
        other = _pick(r, [k for k in facts if k != rel])
        return question, _pick(r, facts[other][1])
    if kind == "other_entity":
        e2 = f"{_pick(r, [x for x in _Q_PREFIX if not e.startswith(x)])} {e.split(' ', 1)[1]}"
        return question, _pick(r, _q_facts(r, e2)[rel][1])
    return question, _q_nonanswer(r, e, rel)


# ==============================================================================================================
# SNLI: image-caption scenes; MNLI: mixed genres; RTE: news (binary)
# ==============================================================================================================
#: SNLI agents: (premise np, reference np, entailed hypernyms, contradicting swaps, plural)
_SN_AGENTS = (
    ("a man", "the man", ("a person", "someone", "a guy"), ("a woman", "a little girl"), False),
    ("a woman", "the woman", ("a person", "someone", "a lady"), ("a man", "a young boy"), False),
    ("a young boy", "the boy", ("a child", "a kid", "someone young"), ("an old woman", "a grown man"), False),
    ("a little girl", "the girl", ("a child", "a kid", "a young person"), ("an old man", "a teenage boy"), False),
    ("an elderly man", "the old man", ("a man", "an older person", "someone"), ("a young girl", "a teenager"), False),
    ("two women", "the women", ("two people", "some people", "a pair of women"), ("two men", "a single child"), True),
    ("a group of teenagers", "the teenagers", ("some young people", "a group of people", "several kids"),
     ("a group of old men", "one lonely toddler"), True),
    ("a man and a woman", "the couple", ("two people", "a couple", "some adults"), ("two small boys", "three nuns"), True),
)
_SN_CLOTHES = ("in a red shirt", "wearing a blue jacket", "in a black hat", "with a backpack", "in a yellow raincoat",
               "wearing sunglasses", "in a striped sweater", "")
#: SNLI actions: (premise vp, entailed activities, entailed settings, neutral refinements of the activity
#: (they imply the activity, so they contradict every *other* action))
_SN_ACTIONS = (
    ("riding a bicycle down a city street", ("riding a bike", "cycling"), ("on a street", "outside"),
     ("riding to work", "racing a friend", "riding a new bike")),
    ("playing a guitar on a small stage", ("playing an instrument", "performing music"), ("on a stage",),
     ("playing a famous song", "performing for a large crowd", "playing at a wedding")),
    ("cooking vegetables in a small kitchen", ("preparing food", "cooking"), ("indoors", "in a kitchen"),
     ("making dinner for the family", "cooking for a party", "making soup")),
    ("kicking a soccer ball across a grassy field", ("playing with a ball",
     "playing soccer"), ("outside", "on a field"),
     ("practicing for a big game", "playing soccer with friends", "about to score a goal")),
    ("climbing a steep rocky cliff", ("climbing", "climbing rocks"), ("outdoors", "on a cliff"),
     ("climbing for the first time", "training for a climbing competition", "climbing with a guide")),
    ("reading a newspaper on a park bench", ("reading", "sitting on a bench"), ("outside", "in a park"),
     ("reading about politics", "reading the sports pages", "reading a local paper")),
    ("selling fruit at a busy market stall", ("selling food", "working at a stall"), ("at a market",),
     ("selling apples", "selling fruit to tourists", "selling fruit from a family farm")),
    ("painting a mural on a brick wall", ("painting", "making art"), ("next to a wall", "outside"),
     ("painting a portrait", "painting for a festival", "painting a mural of a famous singer")),
    ("walking a dog along the beach", ("walking", "walking an animal"), ("near the ocean", "outside"),
     ("walking a neighbor's dog", "walking home", "walking a dog that just had a bath")),
    ("waiting at a bus stop in the rain", ("waiting for a bus", "standing in the rain"), ("outside", "at a bus stop"),
     ("waiting for the bus to school", "waiting for a late bus", "waiting for a bus to the airport")),
    ("carrying boxes up a flight of stairs", ("carrying boxes", "moving boxes"), ("on the stairs", "indoors"),
     ("moving into a new apartment", "carrying boxes of books", "helping a friend move")),
    ("jumping into a swimming pool", ("jumping into water", "swimming"), ("at a pool", "in the water"),
     ("diving in a competition", "jumping into a pool at a birthday party", "swimming to cool off")),
    ("sleeping on a couch", ("sleeping", "resting"), ("indoors", "on a couch"),
     ("sleeping after a long shift", "taking a nap before dinner", "sleeping off a cold")),
    ("dancing at a crowded club", ("dancing", "moving to music"), ("indoors", "at a club"),
     ("dancing with a date", "dancing to a favorite song", "dancing at a birthday party")),
)
#: neutral additions compatible with every scene
_SN_NEUTRAL = ("on vacation", "tired", "happy", "waiting for a friend", "a tourist", "there with family",
               "in a hurry", "celebrating a birthday", "new to the city", "on a day off")


def _be3(plural: bool) -> str:
    return "are" if plural else "is"


@generates("SNLI")
def _gen_snli(r: random.Random, y: int):
    """Caption-like premise "A man in a red shirt is riding a bicycle down a city street."  Entailment: hypernyms
    of the agent, the activity or the setting; neutral: unverifiable refinements (purpose, identity, mood);
    contradiction: another scene's activity, a negated activity, or a swapped agent.  Every hypothesis phrase is
    used under several labels (an activity entails its own scene and contradicts the others)."""
    agent, ref, hypers, swaps, plural = _pick(r, _SN_AGENTS)
    i = r.randrange(len(_SN_ACTIONS))
    act, acts, settings, refine = _SN_ACTIONS[i]
    o_act, o_acts, _, o_refine = _SN_ACTIONS[(i + 1 + r.randrange(len(_SN_ACTIONS) - 1)) % len(_SN_ACTIONS)]
    clothes = _pick(r, _SN_CLOTHES)
    premise = _sentence(f"{agent} {'' if plural else clothes} {_be3(plural)} {act}".replace("  ", " "))
    be = _be3(plural)
    who = _pick(r, (ref, ref, _pick(r, hypers)))
    if y == 0:
        h = _pick(r, (f"{who} {be} {_pick(r, acts)}", f"{who} {be} {_pick(r, settings)}",
                      f"{who} {be} not {_pick(r, o_acts)}", f"{who} {be} {_pick(r, acts)} {_pick(r, settings)}",
                      f"there {be} {_pick(r, hypers)} {_pick(r, acts)}"))
    elif y == 1:
        extra = _pick(r, refine + _SN_NEUTRAL)
        h = _pick(r, (f"{who} {be} {extra}", f"{who} {be} {_pick(r, acts)} and {be} {_pick(r, _SN_NEUTRAL)}",
                      f"{who} {be} not {_pick(r, _SN_NEUTRAL)}", f"{who} {be} {_pick(r, refine)}"))
    else:
        swap = _pick(r, swaps)
        swap_be = "are" if swap.startswith(("two ", "three ")) else "is"
        h = _pick(r, (f"{who} {be} {_pick(r, o_acts)}", f"{who} {be} {_pick(r, o_refine)}",
                      f"{who} {be} not {_pick(r, acts)}", f"{swap} {swap_be} {act}",
                      f"{who} {be} {_pick(r, o_acts)} and {be} {_pick(r, _SN_NEUTRAL)}"))
    return premise, _sentence(h)


#: MNLI genres: agents (np, hypernym / pronoun), events (past, base, participle, antonym past, antonym base,
#: object, object hypernym), times, neutral additions (manner / reason), premise wrappers ({c}, {C} = the clause)
_MN_GENRES: dict[str, dict] = {
    "government": dict(
        agents=(("the city council", "the council"), ("the agency", "officials"), ("the state legislature", "lawmakers"),
                ("the health department", "the department"), ("the review board", "the board")),
        events=(("approved", "approve", "approved", "rejected", "reject", "the plan to build a new clinic", "the clinic plan"),
                ("expanded",
                 "expand", "expanded", "cut", "cut", "funding for the school lunch program", "the lunch program"),
                ("delayed",
                 "delay", "delayed", "sped up", "speed up", "the repairs to the main bridge", "the bridge repairs"),
                ("raised", "raise", "raised", "lowered", "lower", "the fees for building permits", "the permit fees"),
                ("adopted", "adopt", "adopted", "dropped", "drop", "the new safety rules for factories", "the safety rules")),
        times=("in March", "in May", "last year", "in 1998", "in the spring", "after the election"),
        neutral=("after months of debate", "despite protests from residents", "to save money", "by a narrow vote",
                 "at the request of the governor"),
        wrap=("According to the report, {c}.", "{C}, the report says.", "Records show that {c}.", "{C}.")),
    "fiction": dict(
        agents=(("Anna", "she"), ("the old captain", "the man"), ("Tomas", "the boy"), ("her mother", "the woman"),
                ("the stranger", "the visitor")),
        events=(("opened", "open", "opened", "closed", "close", "the heavy door to the cellar", "the door"),
                ("found", "find", "found", "lost", "lose", "the letter from the harbor office", "the letter"),
                ("accepted",
                 "accept", "accepted", "refused", "refuse", "the offer of a room for the night", "the offer"),
                ("lit", "light", "lit", "put out", "put out", "the lamp in the kitchen window", "the lamp"),
                ("locked", "lock", "locked", "unlocked", "unlock", "the gate behind the house", "the gate")),
        times=("before dawn", "after supper", "that evening", "on the third day", "at midnight", "in the morning"),
        neutral=("with shaking hands", "without telling anyone", "because she was afraid", "out of habit",
                 "while the others slept"),
        wrap=("{C}, and for a long while nobody spoke.", "{C}.", "It was quiet when {c}.", "{C}; the rain had stopped.")),
    "telephone": dict(
        agents=(("we", "they"), ("my wife", "she"), ("my son", "he"), ("our neighbors", "they"), ("my brother", "he")),
        events=(("bought", "buy", "bought", "sold", "sell", "the old house on the lake", "the house"),
                ("planted", "plant", "planted", "dug up", "dig up", "a big vegetable garden", "a garden"),
                ("fixed up", "fix up", "fixed up", "wrecked", "wreck", "the old pickup truck", "the truck"),
                ("started",
                 "start", "started", "shut down", "shut down", "a little business selling crafts", "a business"),
                ("joined", "join", "joined", "left", "leave", "the church choir", "the choir")),
        times=("last summer", "a couple of years ago", "back in eighty nine", "this spring", "last fall",
               "when the kids were small"),
        neutral=("to make some extra money", "because the kids wanted it", "with help from a friend", "on a whim",
                 "after a lot of arguing"),
        wrap=("yeah well {c} and uh it worked out okay i guess", "oh {c}, you know", "um {c} and that was that",
              "well {c}")),
    "travel": dict(
        agents=(("the town", "the town"), ("the monks", "the order"), ("the city", "the city"),
                ("the local council", "the council"), ("the harbor authority", "the authority")),
        events=(("restored", "restore", "restored", "abandoned", "abandon", "the medieval chapel on the hill", "the chapel"),
                ("opened", "open", "opened", "closed", "close", "the garden behind the old walls", "the garden"),
                ("widened", "widen", "widened", "narrowed", "narrow", "the road to the upper village", "the road"),
                ("welcomed", "welcome", "welcomed", "banned", "ban", "visitors from abroad", "foreign visitors"),
                ("rebuilt", "rebuild", "rebuilt", "tore down", "tear down", "the stone bridge over the river", "the bridge")),
        times=("in the 1890s", "in the 17th century", "after the war", "in 1955", "during the last century", "in the 1920s"),
        neutral=("with money from a wealthy family", "to attract tourists", "at great expense", "for the first time",
                 "after a long dispute"),
        wrap=("{C}, and it remains one of the highlights of the region.", "{C}.", "Visitors are often told that {c}.",
              "{C}, so allow a full afternoon.")),
}


@generates("MNLI")
def _gen_mnli(r: random.Random, y: int):
    """Premise + hypothesis in one of four genres (government report, fiction, telephone speech, travel guide).
    Entailment: hypernyms, the passive, "did not <antonym>"; neutral: an unverifiable manner / reason / "had never
    ... before"; contradiction: the antonym, another time, "did not <verb>".  Each device (negation, the time, the
    neutral additions) appears under more than one label."""
    g = _MN_GENRES[_pick(r, tuple(_MN_GENRES))]
    agent, a_hyper = _pick(r, g["agents"])
    past, base, pp, anto, anto_base, obj, o_hyper = _pick(r, g["events"])
    anto_pp = {"tore down": "torn down"}.get(anto, anto)
    time, time2 = r.sample(g["times"], 2)
    clause = f"{agent} {past} {obj} {time}"
    premise = _pick(r, g["wrap"]).format(c=clause, C=_cap(clause))
    who, o = _pick(r, (agent, a_hyper)), _pick(r, (obj, o_hyper))
    was = "were" if o.split()[-1].endswith("s") else "was"
    extra = _pick(r, g["neutral"])
    if y == 0:
        h = _pick(r, (f"{who} {past} {o}", f"{o} {was} {pp} {time}", f"{who} did not {anto_base} {o}",
                      f"{o} {was} not {anto_pp} {time}", f"{who} {past} {o} {time}", f"{o} had been {pp}",
                      f"{who} chose to {base} {o}", f"{o} had not been {anto_pp} before {time}"))
    elif y == 1:
        h = _pick(r, (f"{who} {past} {o} {extra}", f"{o} {was} {pp} {extra}", f"{who} did not {anto_base} {o} {extra}",
                      f"{who} had never {pp} {o} before", f"{who} had {anto_pp} {o} once before",
                      f"{who} {past} {o} {time} and again {time2}"))
    else:
        h = _pick(r, (f"{who} {anto} {o}", f"{who} {past} {o} {time2}", f"{who} did not {base} {o}",
                      f"{o} {was} {anto_pp} {time}", f"{who} {anto} {o} {extra}", f"{who} never {past} {o}",
                      f"{who} chose to {anto_base} {o}", f"{o} had never been {pp}", f"{who} {anto} {o} again"))
    return premise, _sentence(h)


_RTE_PEOPLE = ("Maria Lopez", "John Whitfield", "Akira Tanaka", "Helen Brandt", "Omar Haddad", "Sophie Martin",
               "David Okoro", "Laura Chen", "Peter Novak", "Grace Mwangi")
_RTE_ORGS = ("Norsk Energy", "the Atlas Group", "Brightwater Foods", "Kestrel Airlines", "the Pacific Mining Company",
             "Helix Pharmaceuticals", "the National Rail Union", "Orion Software", "the Green Valley Cooperative")
_RTE_ROLES = ("chief executive", "founder", "chair", "spokesperson", "finance director", "president")
_RTE_CITIES = ("Oslo", "Geneva", "Toronto", "Nairobi", "Lyon", "Osaka", "Denver", "Porto", "Adelaide", "Hamburg")


@generates("RTE")
def _gen_rte(r: random.Random, y: int):
    """News premise with embedded facts (role, headquarters, an event with a number); entailment restates one
    fact; not_entailment changes the role, the city, the number or the actor, or adds an unsupported claim."""
    person, person2 = r.sample(_RTE_PEOPLE, 2)
    org, org2 = r.sample(_RTE_ORGS, 2)
    role, role2 = r.sample(_RTE_ROLES, 2)
    city, city2 = r.sample(_RTE_CITIES, 2)
    n, n2 = r.sample(range(2, 60), 2)
    day = _pick(r, ("on Monday", "on Tuesday", "on Thursday", "last week", "yesterday"))
    pairs = (  # (premise event, entailed restatement); the other member of each pair is the wrong one
        ((f"announced plans to cut {n}0 jobs", f"{org} plans to cut jobs"),
         (f"announced plans to hire {n}0 workers", f"{org} plans to hire workers")),
        ((f"agreed to buy {org2} for {n} million dollars", f"{org} agreed to buy {org2}"),
         (f"agreed to sell itself to {org2} for {n} million dollars", f"{org2} agreed to buy {org}")),
        ((f"opened a new plant in {city2}", f"{org} opened a plant in {city2}"),
         (f"closed its plant in {city2}", f"{org} closed a plant in {city2}")),
        ((f"reported a profit of {n} million dollars", f"{org} made a profit"),
         (f"reported a loss of {n} million dollars", f"{org} lost money")),
        ((f"signed a supply deal with {org2}", f"{org} has a deal with {org2}"),
         (f"ended its supply deal with {org2}", f"{org} ended its deal with {org2}")),
    )
    pair = list(_pick(r, pairs))
    r.shuffle(pair)
    (event, e_hyp), (_, e_wrong) = pair
    premise = _pick(r, (
        f"{person}, the {role} of {org}, said {day} that the company, which is based in {city}, had {event}.",
        f"{org}, based in {city}, {event} {day}, {person}, its {role}, told reporters.",
        f"Speaking in {city} {day}, {person}, {role} of {org}, confirmed that the firm had {event}.",
    ))
    premise += " " + _pick(r, (f"{person2}, who runs {org2} from {city2}, declined to comment.",
                               f"{org2}, whose {role2} is {person2}, is based in {city2}.",
                               f"A rival, {org2} of {city2}, said {person2} would respond later."))
    if y == 0:
        h = _pick(r, (f"{person} is the {role} of {org}", f"{org} is based in {city}", e_hyp, e_hyp,
                      f"{person} works for {org}", f"{person} spoke about {org}"))
    else:
        h = _pick(r, (f"{person} is the {role2} of {org}", f"{org} is based in {city2}", e_wrong, e_wrong,
                      f"{person2} is the {role} of {org}", f"{person2} works for {org}",
                      f"{person} spoke about {org2}"))
    return premise, _sentence(h)


# ==============================================================================================================
# MRPC: news sentence pairs, paraphrase or not; QQP: question pairs, duplicate or not
# ==============================================================================================================
_MR_SUBJECTS = ("The company", "Microsoft", "The airline", "Shell", "The retailer", "The bank", "Toyota", "Nokia",
                "The hospital group", "Pfizer", "The carmaker", "Boeing")
_MR_SAY = (("said", "stated", "announced"), ("said", "reported", "told investors"))
_MR_EVENTS = (  # (variants for the same fact..., with {n}); direction pairs give a non-paraphrase
    (("its profit rose {n} percent in the third quarter", "third-quarter profit increased {n} percent",
      "its profit climbed {n} percent in the July-September quarter"),
     ("its profit fell {n} percent in the third quarter", "third-quarter profit dropped {n} percent",
      "its profit declined {n} percent in the July-September quarter")),
    (("it would cut {n}00 jobs by the end of the year", "it plans to eliminate {n}00 positions before year-end",
      "about {n}00 jobs will go by December"),
     ("it would add {n}00 jobs by the end of the year", "it plans to hire {n}00 workers before year-end",
      "about {n}00 new jobs will be created by December")),
    (("it agreed to pay ${n} million to settle the lawsuit", "it will pay ${n} million to end the legal case",
      "the lawsuit was settled for ${n} million"),
     ("it refused to pay ${n} million to settle the lawsuit", "it will fight the ${n} million lawsuit in court",
      "it rejected a ${n} million settlement of the lawsuit")),
    (("its sales grew {n} percent last year", "sales increased {n} percent in the last year",
      "last year's sales were up {n} percent"),
     ("its sales shrank {n} percent last year", "sales declined {n} percent in the last year",
      "last year's sales were down {n} percent")),
    (("it will open {n} new stores next spring", "{n} new stores are set to open next spring",
      "it plans {n} store openings in the spring"),
     ("it will close {n} stores next spring", "{n} stores are set to close next spring",
      "it plans {n} store closures in the spring")),
)
_MR_DAYS = ("on Tuesday", "on Wednesday", "on Monday", "late on Thursday", "on Friday")
_MR_EXTRA = ("and that its chief executive would step down", "and that it would move its headquarters to Texas",
             "and that prices would rise next year", "and that it had been fined by regulators")


def _mrpc_render(r: random.Random, subj: str, fact: str, day: str, say: tuple[str, ...], extra: str = "") -> str:
    v = _pick(r, say)
    low = subj[0].lower() + subj[1:] if subj.startswith("The ") else subj
    forms = [f"{subj} {v}{' ' + day if day else ''} that {fact}{extra}."]
    if not extra:
        forms.append(f"{_cap(fact)}, {low} {v}{' ' + day if day else ''}.")
        if day:
            forms.append(f"{_cap(day)}, {low} {v} that {fact}.")
    return _pick(r, forms)


@generates("MRPC")
def _gen_mrpc(r: random.Random, y: int):
    """Two renderings of one news fact (synonyms, reordering, another reporting verb, the day sometimes
    dropped): equivalent.  Not equivalent: one substantive change (the number, the direction, the actor, the
    day, or a claim only one sentence makes).  Directions and extra claims occur in equivalent pairs too."""
    subj = _pick(r, _MR_SUBJECTS)
    fam = list(_pick(r, _MR_EVENTS))
    r.shuffle(fam)
    same, opposite = fam
    n = r.randint(2, 40)
    f1, f2 = r.sample(same, 2) if len(same) > 1 else (same[0], same[0])
    day = _pick(r, _MR_DAYS)
    shared_extra = f" {_pick(r, _MR_EXTRA)}" if r.random() < 0.2 else ""
    a = _mrpc_render(r, subj, f1.format(n=n), day, _MR_SAY[0], shared_extra)
    if y == 1:
        b = _mrpc_render(r, subj, f2.format(n=n), day if r.random() < 0.7 else "", _MR_SAY[1], shared_extra)
    else:
        change = _weighted(r, {"number": 0.3, "direction": 0.25, "actor": 0.15, "day": 0.1, "extra": 0.2})
        fact, day2, subj2, extra = f2.format(n=n), day, subj, shared_extra
        if change == "number":
            fact = f2.format(n=n + r.randint(1, 9) if n < 10 or r.random() < 0.5 else n - r.randint(1, 9))
        elif change == "direction":
            fact = _pick(r, opposite).format(n=n)
        elif change == "actor":
            subj2 = _pick(r, [x for x in _MR_SUBJECTS if x != subj])
        elif change == "day":
            day2 = _pick(r, [d for d in _MR_DAYS if d != day])
        else:
            extra = f" {_pick(r, [e for e in _MR_EXTRA if f' {e}' != shared_extra])}"
        b = _mrpc_render(r, subj2, fact, day2, _MR_SAY[1], extra)
    return a, b


_QQ_TOPICS = ("Python", "the guitar", "Spanish", "chess", "machine learning", "photography", "cooking", "swimming",
              "investing", "public speaking", "Japanese", "drawing", "the piano", "data science", "yoga", "French",
              "Java", "the violin", "calculus", "web design", "boxing", "knitting", "German", "statistics",
              "digital marketing", "singing", "sketching", "accounting", "ballet", "Arabic")
_QQ_FACETS = {
    "fast": ("How can I learn {x} quickly?", "What is the fastest way to learn {x}?",
             "How do I get good at {x} in a short time?", "What's the quickest way to pick up {x}?"),
    "start": ("How do I start learning {x}?", "Where should a beginner start with {x}?",
              "What is the best way to begin learning {x}?", "What should I do first if I want to learn {x}?"),
    "worth": ("Is {x} worth learning?", "Should I bother learning {x}?", "Is it worth it to learn {x} these days?",
              "Is learning {x} a waste of time?"),
    "books": ("What are the best books on {x}?", "Which books should I read to learn {x}?",
              "Can you recommend good books about {x}?", "What is a good book for learning {x}?"),
    "hard": ("Is {x} hard to learn?", "How difficult is it to learn {x}?", "Why is {x} so hard to learn?",
             "Is learning {x} difficult for most people?"),
    "old": ("Am I too old to learn {x}?", "Is it too late to learn {x} at 40?", "Can adults still learn {x}?",
            "Is 50 too old to start learning {x}?"),
    "money": ("How can I make money with {x}?", "Can you earn a living from {x}?", "What jobs can I get if I know {x}?",
              "Is it possible to make a career out of {x}?"),
    "teach": ("How do I teach {x} to kids?", "What is the best way to teach {x} to children?",
              "How can I get my kids interested in {x}?", "How should {x} be taught to young children?"),
}


@generates("QQP")
def _gen_qqp(r: random.Random, y: int):
    """Duplicates: two phrasings of the same intent (facet × topic); not duplicates: the same topic with another
    facet (two thirds) or the same facet about another topic, so both labels share most words."""
    topic = _pick(r, _QQ_TOPICS)
    facet = _pick(r, tuple(_QQ_FACETS))
    if y == 1:
        q1, q2 = r.sample(_QQ_FACETS[facet], 2)
        return q1.format(x=topic), q2.format(x=topic)
    q1 = _pick(r, _QQ_FACETS[facet]).format(x=topic)
    if r.random() < 0.67:
        other = _pick(r, [f for f in _QQ_FACETS if f != facet])
        q2 = _pick(r, _QQ_FACETS[other]).format(x=topic)
    else:
        q2 = _pick(r, _QQ_FACETS[facet]).format(x=_pick(r, [t for t in _QQ_TOPICS if t != topic]))
    return (q1, q2) if r.random() < 0.5 else (q2, q1)
