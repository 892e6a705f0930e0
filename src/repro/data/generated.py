"""Deterministic generated English classification tasks mirroring the paper tasks (cpu / smoke profiles).

Nothing is downloaded: every task is built compositionally from small vocabulary lists and sentence templates, so
the same ``(task, n, seed)`` always gives the same examples, on any machine, in milliseconds.

**Design.**  Each task has one generator per label, ``gen(rng, label) -> (text_a, text_b)``.  Labels are
assigned *by construction* (no label noise), but the label is never given away by a single keyword: the
generators use graded polarity words, negation of the opposite polarity ("not bad", "hardly brilliant", "far
from perfect"), contrast clauses whose *main* clause carries the label ("the plot was dull, but the acting was
superb"; "the acting was superb, even though the plot was dull"), neutral distractor sentences, cross-topic
vocabulary, and, for the pair tasks, hypotheses / questions that share most of their words with the first
sentence whatever the label.  :func:`describe` gives the recipe of each task (the book prints it).

**Splits.**  :func:`train_test` draws one stream of examples per label and routes each text to *test* (about
one in five, decided by a hash of the text) or to the *train pool*; texts are de-duplicated within each split,
so train and test are disjoint, both exactly label-balanced (when the size is a multiple of the number of
labels), and each is a prefix-stable function of ``seed``: a larger train pool extends a smaller one and does
not change the test set.  :func:`repro.data.load_task` then draws the LM-BFF k-shot train/dev from the pool.
"""

from __future__ import annotations

import hashlib
import random
from typing import Callable

from repro.data import TASKS, Example

#: test size used when a profile asks for "all" test examples (n_test = 0)
DEFAULT_TEST_SIZE = 1000
#: train pool per label = POOL_FACTOR · k (at least MIN_POOL_PER_LABEL), so k-shot seeds draw different examples
POOL_FACTOR = 4
MIN_POOL_PER_LABEL = 256
_TEST_EVERY = 5  # about 1 in 5 generated texts goes to the test stream

Gen = Callable[[random.Random, int], tuple[str, "str | None"]]


# ==============================================================================================================
# helpers
# ==============================================================================================================
def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _pick(r: random.Random, items):
    return items[r.randrange(len(items))]


def _weighted(r: random.Random, weights: dict[str, float]) -> str:
    x = r.random() * sum(weights.values())
    for key, w in weights.items():
        x -= w
        if x < 0:
            return key
    return key


def _a(word: str) -> str:
    """Indefinite article for ``word``."""
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def _sentence(s: str) -> str:
    s = _cap(s.strip())
    return s if s[-1] in ".!?" else s + "."


# ==============================================================================================================
# sentiment family (SST-2, MR, CR, Yelp, IMDb)
# ==============================================================================================================
#: intensifiers (empty = none)
_INTENS = ("", "", "", "really ", "truly ", "remarkably ", "genuinely ", "pretty ", "thoroughly ", "incredibly ")
#: negators that flip an adjective of the opposite polarity ("not bad" is positive, "not great" negative)
_NEGATORS = ("not ", "not at all ", "hardly ", "far from ", "anything but ", "never ", "not exactly ",
             "not particularly ", "by no means ", "nowhere near ", "not remotely ")
#: the same before a noun phrase ("hardly a dull film")
_NP_NEGATORS = ("not ", "hardly ", "far from ", "anything but ", "by no means ", "not exactly ", "in no way ")
#: contrast connectives: {m} = main clause (carries the label), {o} = the other clause
_CONTRASTS = (
    "{o}, but {m}", "{o}, but {m}", "although {o}, {m}", "{m}, even though {o}", "{o}; still, {m}",
    "{o}, yet {m}", "while {o}, {m}", "{m}, despite the fact that {o}", "sure, {o}, but {m}",
    "{o}. However, {m}", "{m}, although {o}", "{m}, though {o}",
)
_OVERALL = ("overall", "in the end", "all in all", "on the whole", "bottom line", "that said")


class _Domain:
    """Vocabulary of one review domain: aspects with their own adjectives, generic adjectives, whole-item
    subjects, whole-item verb phrases per polarity, verdicts, neutral distractor sentences, item nouns."""

    def __init__(self, aspects, generic, wholes, vps, verdicts, neutral, nouns):
        self.aspects = aspects  # (noun phrase, plural, (positive adjs), (negative adjs))
        self.generic = generic  # ((pos strong, pos mild), (neg strong, neg mild))
        self.wholes = wholes
        self.vps = vps  # (negative vps, positive vps)
        self.verdicts = verdicts  # (negative, positive)
        self.neutral = neutral
        self.nouns = nouns

    def generic_adj(self, r: random.Random, pol: int) -> str:
        strong, mild = self.generic[0] if pol == 1 else self.generic[1]
        return _pick(r, strong if r.random() < 0.5 else mild)

    def adj(self, r: random.Random, aspect, pol: int) -> str:
        own = aspect[2] if pol == 1 else aspect[3]
        return _pick(r, own) if r.random() < 0.5 else self.generic_adj(r, pol)


def _be(plural: bool, past: bool) -> str:
    if past:
        return "were" if plural else "was"
    return "are" if plural else "is"


def _clause(d: _Domain, r: random.Random, pol: int, past: bool, negation: float = 0.25,
            avoid: set | None = None) -> str:
    """One clause with polarity ``pol``: an aspect judgement, a whole-item judgement or verb phrase; with
    probability ``negation`` the judgement is a negated adjective of the opposite polarity."""
    form = _weighted(r, {"aspect": 0.6, "vp": 0.15, "item": 0.25})
    be = "was" if past else "is"
    if form == "vp":
        return f"{_pick(r, d.wholes)} {_pick(r, d.vps[pol])}"
    if form == "item":
        subj = _pick(r, ("it", "this", "this one", "the whole thing"))
        if r.random() < negation:
            return f"{subj} {be} {_pick(r, _NP_NEGATORS)}{_a(d.generic_adj(r, 1 - pol))} {_pick(r, d.nouns)}"
        return f"{subj} {be} {_a(_pick(r, _INTENS) + d.generic_adj(r, pol))} {_pick(r, d.nouns)}"
    choices = [a for a in d.aspects if not avoid or a[0] not in avoid]
    aspect = _pick(r, choices)
    if avoid is not None:
        avoid.add(aspect[0])
    be = _be(aspect[1], past)
    if r.random() < negation:
        return f"{aspect[0]} {be} {_pick(r, _NEGATORS)}{d.adj(r, aspect, 1 - pol)}"
    return f"{aspect[0]} {be} {_pick(r, _INTENS)}{d.adj(r, aspect, pol)}"


def _review(d: _Domain, r: random.Random, y: int, weights: dict[str, float]) -> str:
    past = r.random() < 0.6
    used: set = set()
    form = _weighted(r, weights)
    if form == "simple":
        body = _clause(d, r, y, past, negation=0.0)
    elif form == "negated":
        body = _clause(d, r, y, past, negation=1.0)
    elif form == "contrast":
        body = _pick(r, _CONTRASTS).format(m=_clause(d, r, y, past, avoid=used),
                                           o=_clause(d, r, 1 - y, past, avoid=used))
    elif form == "agree":
        body = f"{_clause(d, r, y, past, avoid=used)} and {_clause(d, r, y, past, avoid=used)}"
    elif form == "verdict":
        body = f"{_clause(d, r, 1 - y, past, avoid=used)}, but {_pick(r, _OVERALL)} {_pick(r, d.verdicts[y])}"
    else:  # "distractor"
        body = _clause(d, r, y, past, negation=0.3)
        neutral = _sentence(_pick(r, d.neutral))
        return f"{neutral} {_sentence(body)}" if r.random() < 0.5 else f"{_sentence(body)} {neutral}"
    return _sentence(body)


_MOVIE = _Domain(
    aspects=[
        ("the plot", False, ("gripping", "clever", "inventive"), ("predictable", "muddled", "thin")),
        ("the acting", False, ("convincing", "nuanced", "powerful"), ("wooden", "stiff", "hammy")),
        ("the script", False, ("sharp", "witty", "clever"), ("clumsy", "lazy", "clichéd")),
        ("the dialogue", False, ("witty", "natural", "sharp"), ("stilted", "clunky", "laughable")),
        ("the ending", False, ("satisfying", "moving", "surprising"), ("rushed", "silly", "predictable")),
        ("the pacing", False, ("brisk", "tight", "assured"), ("sluggish", "uneven", "plodding")),
        ("the soundtrack", False, ("haunting", "lovely", "memorable"), ("grating", "forgettable", "intrusive")),
        ("the cinematography", False, ("gorgeous", "stunning", "beautiful"), ("murky", "ugly", "flat")),
        ("the cast", False, ("terrific", "charming", "excellent"), ("miscast", "wasted", "lifeless")),
        ("the direction", False, ("confident", "assured", "inspired"), ("clumsy", "aimless", "heavy-handed")),
        ("the lead performance", False, ("magnetic", "fearless", "touching"), ("wooden", "flat", "irritating")),
        ("the humor", False, ("hilarious", "smart", "charming"), ("juvenile", "crude", "stale")),
        ("the story", False, ("moving", "engaging", "original"), ("contrived", "tired", "thin")),
        ("the characters", True, ("vivid", "likable", "memorable"), ("cardboard", "annoying", "flat")),
        ("the special effects", True, ("dazzling", "seamless", "impressive"), ("cheap", "cheesy", "dated")),
        ("the action scenes", True, ("thrilling", "exciting", "inventive"), ("chaotic", "incoherent", "boring")),
        ("the jokes", True, ("hilarious", "clever", "sharp"), ("stale", "flat", "crude")),
        ("the visuals", True, ("striking", "lush", "gorgeous"), ("drab", "murky", "cheap")),
    ],
    generic=((("superb", "brilliant", "wonderful", "outstanding", "terrific", "excellent", "masterful"),
              ("solid", "decent", "likable", "pleasant", "engaging", "charming", "enjoyable", "fine")),
             (("awful", "dreadful", "terrible", "atrocious", "painful", "abysmal", "lousy"),
              ("dull", "bland", "forgettable", "tedious", "mediocre", "lifeless", "boring"))),
    wholes=("the film", "this movie", "it", "the picture", "the sequel", "the remake", "this comedy",
            "the thriller", "this drama"),
    vps=(("dragged on forever", "put me to sleep", "made me check my watch", "falls apart in the second half",
          "never comes to life", "goes nowhere", "wastes a talented cast", "overstays its welcome",
          "left me cold", "feels twice as long as it is"),
         ("kept me hooked from start to finish", "made me laugh out loud", "stayed with me for days",
          "never lets up", "earns every one of its tears", "moved me to tears", "won me over completely",
          "flies by", "delivers on every promise", "left me smiling")),
    verdicts=(("I would not recommend it", "I want my two hours back", "it is a waste of time",
               "you should skip this one", "I regret buying a ticket", "it does not work"),
              ("I would happily watch it again", "it is worth seeing", "I can't recommend it enough",
               "you should not miss it", "it is one of the best films of the year", "it works")),
    neutral=("I saw it at a late show with two friends", "It runs about two hours",
             "It opened in theaters last Friday", "The director also wrote the screenplay",
             "It is based on a novel from the seventies", "My brother picked it for movie night",
             "The film is in English with some French dialogue", "It was shot mostly in Canada",
             "I watched it on a long flight", "This is the third film in the series"),
    nouns=("film", "movie", "thriller", "comedy", "drama", "story", "experience", "debut", "sequel"),
)

_PRODUCT = _Domain(
    aspects=[
        ("the battery life", False, ("excellent", "amazing", "long"), ("short", "disappointing", "pathetic")),
        ("the screen", False, ("bright", "sharp", "crisp"), ("dim", "grainy", "fragile")),
        ("the camera", False, ("sharp", "fast", "excellent"), ("blurry", "slow", "grainy")),
        ("the sound quality", False, ("rich", "crisp", "clear"), ("tinny", "muffled", "harsh")),
        ("the keyboard", False, ("comfortable", "responsive", "solid"), ("cramped", "mushy", "flimsy")),
        ("the software", False, ("intuitive", "stable", "fast"), ("buggy", "confusing", "sluggish")),
        ("the price", False, ("reasonable", "fair", "unbeatable"), ("outrageous", "steep", "inflated")),
        ("the build quality", False, ("sturdy", "solid", "premium"), ("cheap", "flimsy", "shoddy")),
        ("the zoom", False, ("smooth", "powerful", "quick"), ("jerky", "weak", "sluggish")),
        ("the menu system", False, ("simple", "logical", "intuitive"), ("confusing", "clumsy", "cluttered")),
        ("the remote", False, ("handy", "responsive", "simple"), ("unresponsive", "awkward", "flimsy")),
        ("customer support", False, ("helpful", "quick", "friendly"), ("useless", "rude", "slow")),
        ("the setup", False, ("painless", "quick", "easy"), ("frustrating", "confusing", "tedious")),
        ("the buttons", True, ("responsive", "solid", "well placed"), ("stiff", "flimsy", "awkward")),
        ("the speakers", True, ("loud", "clear", "rich"), ("tinny", "weak", "distorted")),
        ("the pictures", True, ("crisp", "sharp", "vivid"), ("blurry", "washed out", "grainy")),
    ],
    generic=((("excellent", "fantastic", "amazing", "superb", "outstanding", "great"),
              ("decent", "reliable", "solid", "good", "nice", "handy", "adequate")),
             (("awful", "terrible", "horrible", "useless", "pathetic", "abysmal"),
              ("mediocre", "disappointing", "poor", "annoying", "unreliable", "weak"))),
    wholes=("this phone", "the player", "this camera", "it", "the router", "this printer", "the unit",
            "this laptop", "the device"),
    vps=(("stopped working after a week", "keeps freezing", "broke within a month", "was a waste of money",
          "drains its battery in hours", "crashes every time I open it", "had to go back to the store",
          "feels cheap in the hand", "died two days after the warranty ran out", "constantly drops the connection"),
         ("works flawlessly", "does everything I need", "was worth every penny", "has held up for years",
          "exceeded my expectations", "feels great in the hand", "never lets me down", "just works",
          "was easy to set up", "has not crashed once")),
    verdicts=(("I would not buy it again", "I returned it", "avoid this one", "I regret buying it",
               "save your money", "it is not worth the price"),
              ("I would buy it again", "I love it", "I recommend it to everyone", "it was a great buy",
               "it is worth the money", "I am glad I bought it")),
    neutral=("I bought it last month for my daughter", "It comes in black and silver",
             "I ordered it online and it arrived on Tuesday", "I mostly use it at work",
             "It replaced a model I had for five years", "The box includes a charger and a cable",
             "I have owned it for about three weeks", "My wife uses it more than I do",
             "It was on sale over the holidays", "I use it for travel"),
    nouns=("phone", "player", "camera", "product", "purchase", "device", "gadget", "value"),
)

_RESTAURANT = _Domain(
    aspects=[
        ("the service", False, ("attentive", "friendly", "quick"), ("slow", "rude", "sloppy")),
        ("the food", False, ("delicious", "fresh", "tasty"), ("bland", "cold", "greasy")),
        ("the staff", True, ("friendly", "welcoming", "helpful"), ("rude", "indifferent", "unfriendly")),
        ("the pasta", False, ("perfectly cooked", "delicious", "fresh"), ("soggy", "overcooked", "bland")),
        ("the steak", False, ("juicy", "tender", "perfectly cooked"), ("tough", "dry", "overcooked")),
        ("the dessert", False, ("heavenly", "delicious", "decadent"), ("stale", "bland", "sickly sweet")),
        ("the atmosphere", False, ("cozy", "lively", "charming"), ("dreary", "noisy", "cramped")),
        ("the prices", True, ("reasonable", "fair", "a bargain"), ("outrageous", "steep", "too high")),
        ("the portions", True, ("generous", "huge", "filling"), ("tiny", "stingy", "sad")),
        ("our server", False, ("attentive", "sweet", "knowledgeable"), ("rude", "forgetful", "careless")),
        ("the coffee", False, ("rich", "strong", "smooth"), ("burnt", "watery", "lukewarm")),
        ("the sushi", False, ("fresh", "delicious", "beautifully made"), ("warm", "fishy", "sloppy")),
        ("the tacos", True, ("flavorful", "fresh", "delicious"), ("soggy", "bland", "greasy")),
        ("the fries", True, ("crispy", "hot", "perfectly salted"), ("soggy", "cold", "stale")),
    ],
    generic=((("amazing", "fantastic", "outstanding", "incredible", "excellent", "superb"),
              ("good", "nice", "solid", "decent", "pleasant", "satisfying")),
             (("awful", "horrible", "terrible", "disgusting", "inedible", "atrocious"),
              ("disappointing", "mediocre", "poor", "sad", "lackluster", "underwhelming"))),
    wholes=("this place", "the restaurant", "it", "this spot", "the diner", "the new location", "the bistro",
            "this cafe"),
    vps=(("lost a customer today", "was a total letdown", "made us wait an hour for a table",
          "got our order wrong twice", "charged us for drinks we never got", "has gone downhill",
          "left us hungry and annoyed", "ruined my birthday dinner"),
         ("is my new favorite spot", "never disappoints", "is worth the drive", "made our anniversary special",
          "gets everything right", "has become our weekly tradition", "exceeded our expectations",
          "deserves every one of its five stars")),
    verdicts=(("we will not be back", "I would not come back", "it is best avoided", "I regret going",
               "it was a waste of money", "it is not worth it"),
              ("we will be back", "I would come back", "it is worth a visit", "I can't wait to return",
               "it is worth every penny", "it is a gem")),
    neutral=("We went there on a Friday night", "It is next to the old cinema on Main Street",
             "We were a group of six", "Parking is on the street", "I came here for lunch with coworkers",
             "They opened about a year ago", "We sat on the patio", "My sister picked the place",
             "It was my second visit", "We ordered the set menu"),
    nouns=("place", "restaurant", "spot", "meal", "dinner", "experience", "lunch"),
)

_SST2_W = {"simple": 0.35, "negated": 0.12, "contrast": 0.28, "agree": 0.1, "verdict": 0.05, "distractor": 0.1}
_MR_W = {"simple": 0.3, "negated": 0.15, "contrast": 0.35, "agree": 0.1, "verdict": 0.0, "distractor": 0.1}
_CR_W = {"simple": 0.3, "negated": 0.15, "contrast": 0.3, "agree": 0.05, "verdict": 0.1, "distractor": 0.1}
_YELP_W = {"simple": 0.25, "negated": 0.15, "contrast": 0.3, "agree": 0.05, "verdict": 0.1, "distractor": 0.15}


def _gen_sst2(r: random.Random, y: int):
    return _review(_MOVIE, r, y, _SST2_W), None


def _mr_clause(r: random.Random, y: int) -> str:
    """MR style: critic snippets (noun phrases) as well as sentences."""
    if r.random() < 0.5:
        return _review(_MOVIE, r, y, _MR_W)
    d = _MOVIE
    adj, adj2 = d.generic_adj(r, y), d.generic_adj(r, y)
    noun = _pick(r, d.nouns)
    kind = _weighted(r, {"np": 0.35, "neg": 0.2, "contrast": 0.45})
    if kind == "np":
        core = _pick(r, (f"{_a(adj)} and {adj2} {noun}", f"{_a(adj)} {noun} that {_pick(r, d.vps[y])}",
                         f"{_a(_pick(r, _INTENS) + adj)} {noun}"))
    elif kind == "neg":
        core = f"{_a(noun)} that is {_pick(r, _NEGATORS)}{d.generic_adj(r, 1 - y)}"
    else:
        other = f"{_a(d.generic_adj(r, 1 - y))} {_pick(r, ('premise', 'first hour', 'cast', 'opening', 'idea'))}"
        core = _pick(r, (f"{other}, but {_a(adj)} {noun}", f"{_a(adj)} {noun}, despite {other}",
                         f"{_a(adj)} {noun} with {other}",
                         f"{_a(adj)} {noun} that {_pick(r, d.vps[1 - y])} at times",
                         f"for all its {_pick(r, ('ambition', 'promise', 'flaws', 'gloss', 'excess', 'problems'))}, "
                         f"{_a(adj)} {noun}"))
    return _sentence(core)


def _gen_mr(r: random.Random, y: int):
    return _mr_clause(r, y), None


def _gen_cr(r: random.Random, y: int):
    return _review(_PRODUCT, r, y, _CR_W), None


def _gen_yelp(r: random.Random, y: int):
    return _review(_RESTAURANT, r, y, _YELP_W), None


def _gen_imdb(r: random.Random, y: int):
    """A longer review: neutral opening, 3-4 aspect sentences (majority with the label), a verdict."""
    d = _MOVIE
    past = r.random() < 0.5
    n = r.choice((3, 4))
    pols = [y] * n
    minority = r.choice((0, 1)) if n == 3 else r.choice((0, 1, 1))
    for i in r.sample(range(n), minority):
        pols[i] = 1 - y
    parts = [_sentence(_pick(r, d.neutral))]
    for p in pols:
        if r.random() < 0.3:
            parts.append(_sentence(_pick(r, _CONTRASTS).format(m=_clause(d, r, p, past),
                                                                o=_clause(d, r, 1 - p, past))))
        else:
            parts.append(_sentence(_clause(d, r, p, past, negation=0.4)))
    parts.append(_sentence(f"{_pick(r, _OVERALL)}, {_clause(d, r, y, past, negation=0.5)}"))
    return " ".join(parts), None


# ==============================================================================================================
# MPQA: short opinion phrases from news
# ==============================================================================================================
_MPQA_VERBS = (  # (negative, positive) past-tense opinion verbs
    ("condemned", "criticized", "rejected", "denounced", "attacked", "accused", "opposed", "blamed", "slammed",
     "undermined", "protested against", "ridiculed", "distrusted", "feared", "resented", "violated"),
    ("welcomed", "praised", "supported", "backed", "applauded", "endorsed", "hailed", "approved", "celebrated",
     "defended", "trusted", "thanked", "admired", "embraced", "honored", "respected"),
)
_MPQA_BASE = (  # bare forms for "failed to ...", "refused to ..."
    ("condemn", "criticize", "reject", "oppose", "blame", "attack", "undermine", "obstruct"),
    ("support", "welcome", "back", "endorse", "approve", "respect", "honor", "accept"),
)
_MPQA_NOUNS = (
    ("crisis", "threat", "terrorism", "violence", "corruption", "failure", "suspicion", "fears", "repression",
     "chaos", "outrage", "aggression", "hostility", "intimidation", "abuses", "tension", "anger", "mistrust"),
    ("support", "success", "hope", "progress", "agreement", "cooperation", "peace", "stability", "freedom",
     "prosperity", "praise", "confidence", "reconciliation", "optimism", "goodwill", "trust", "dialogue"),
)
_MPQA_ADJS = (
    ("unfair", "illegal", "hostile", "brutal", "dangerous", "absurd", "unacceptable", "arrogant",
     "illegitimate", "disastrous", "reckless", "hypocritical", "repressive", "deplorable", "corrupt"),
    ("fair", "legitimate", "positive", "constructive", "peaceful", "fruitful", "generous", "democratic",
     "successful", "reasonable", "historic", "courageous", "wise", "responsible", "encouraging"),
)
_MPQA_ADVS = ("strongly", "warmly", "sharply", "bitterly", "fully", "openly", "repeatedly", "firmly", "publicly",
              "quickly", "loudly", "")
_MPQA_OBJECTS = ("the plan", "the proposal", "the move", "the decision", "the new law", "the talks", "the ruling",
                 "the visit", "the measures", "washington 's policy", "the election results", "the government",
                 "the report", "the treaty", "the reforms", "the verdict", "the minister 's remarks", "the offer")
_MPQA_PLAIN = ("policies", "elections", "measures", "steps", "reforms", "demands", "methods", "leadership",
               "behavior", "approach", "campaign", "response")
_MPQA_SUBJECTS = ("critics", "the opposition", "the minister", "observers", "the president", "rights groups",
                  "the un", "analysts", "officials", "many people", "the public", "european leaders")


#: polarity flippers, each used with content words of *both* polarities, so no flipper is a keyword
_MPQA_FLIPS = (("not {adj}", "adj"), ("far from {adj}", "adj"), ("hardly {adj}", "adj"), ("no longer {adj}", "adj"),
               ("never {adj}", "adj"), ("no {noun}", "noun"), ("without any {noun}", "noun"),
               ("an end to the {noun}", "noun"), ("lack of {noun}", "noun"), ("little {noun}", "noun"),
               ("refused to {base} {obj}", "base"), ("did not {base} {obj}", "base"), ("stopped short of {ing}", "ing"))


def _ing(verb: str) -> str:
    stem = verb[:-1] if verb.endswith("e") and not verb.endswith("ee") else verb
    return stem + "ing"


def _mpqa_flip(r: random.Random, y: int) -> str:
    """A phrase whose polarity is the opposite of its content word ("not fair", "no threat", "an end to the
    violence", "refused to condemn")."""
    frame, kind = _pick(r, _MPQA_FLIPS)
    c = 1 - y  # content polarity
    return frame.format(adj=_pick(r, _MPQA_ADJS[c]), noun=_pick(r, _MPQA_NOUNS[c]), base=_pick(r, _MPQA_BASE[c]),
                        obj=_pick(r, _MPQA_OBJECTS), ing=f"{_ing(_pick(r, _MPQA_BASE[c]))} {_pick(r, _MPQA_OBJECTS)}")


def _gen_mpqa(r: random.Random, y: int):
    """Short opinion expressions (1-7 words, lower-case as in MPQA); a third are polarity flips."""
    form = _weighted(r, {"verb": 0.2, "verb_obj": 0.15, "adj": 0.15, "noun": 0.12, "flip": 0.3, "clause": 0.08})
    if form == "verb":
        text = f"{_pick(r, _MPQA_ADVS)} {_pick(r, _MPQA_VERBS[y])}".strip()
    elif form == "verb_obj":
        text = f"{_pick(r, _MPQA_VERBS[y])} {_pick(r, _MPQA_OBJECTS)}"
    elif form == "adj":
        text = _pick(r, (_pick(r, _MPQA_ADJS[y]), f"{_pick(r, _MPQA_ADJS[y])} {_pick(r, _MPQA_PLAIN)}",
                         f"{_pick(r, ('very', 'deeply', 'truly', 'utterly', 'so'))} {_pick(r, _MPQA_ADJS[y])}"))
    elif form == "noun":
        text = _pick(r, (_pick(r, _MPQA_NOUNS[y]), f"{_pick(r, _MPQA_NOUNS[y])} over {_pick(r, _MPQA_OBJECTS)}",
                         f"growing {_pick(r, _MPQA_NOUNS[y])}"))
    elif form == "flip":
        text = _mpqa_flip(r, y)
    else:
        text = f"{_pick(r, _MPQA_SUBJECTS)} {_pick(r, _MPQA_ADVS)} {_pick(r, _MPQA_VERBS[y])} {_pick(r, _MPQA_OBJECTS)}"
    return " ".join(text.split()), None


# ==============================================================================================================
# Subj: subjective opinions vs objective plot / fact sentences (movies)
# ==============================================================================================================
_NAMES = ("maria", "jack", "elena", "tom", "nadia", "sam", "lucy", "omar", "grace", "leo", "hannah", "victor",
          "rosa", "daniel", "mei", "frank", "iris", "paul", "clara", "hugo")
_ROLES = ("a young nurse", "a retired detective", "a struggling musician", "a grieving widow", "a small-town sheriff",
          "a ruthless gangster", "a shy schoolteacher", "a charming con artist", "a brilliant surgeon",
          "a lonely fisherman", "an ambitious reporter", "a teenage runaway", "a disgraced boxer",
          "a single mother", "a bitter old farmer", "a gifted chess player", "a clumsy thief", "a famous chef")
_PLACES = ("lisbon", "a mining town in wales", "1950s brooklyn", "rural japan", "a remote island", "berlin",
           "a crumbling hotel", "the texas border", "a boarding school", "postwar vienna", "a coastal village",
           "a space station", "new orleans", "the scottish highlands")
_PLOT_VPS = ("travels to {place} to find a missing brother", "falls in love with a stranger",
             "must protect a witness from a vicious gang", "returns home after twenty years in prison",
             "discovers a terrible family secret", "tries to save the family farm", "plans one last heist",
             "is forced to confront a painful past", "befriends a lonely boy next door",
             "enters a dangerous underground tournament", "fights a bitter custody battle",
             "investigates a string of brutal murders", "inherits a crumbling mansion",
             "joins a traveling circus", "wakes up with no memory of the night before",
             "loses everything in a devastating storm", "is hired to guard a priceless painting")
_PLOT_TWISTS = ("nothing is what it seems", "an old enemy returns", "the police close in", "a storm cuts off the town",
                "her partner disappears", "the money goes missing", "a child's life is at stake",
                "the war reaches the village")
_FACTS = ("the film was shot in {place} over {n} weeks", "it is the director's {ord} feature",
          "the documentary features interviews with {who}", "the screenplay is adapted from a {year} novel",
          "the story takes place over a single night in {place}", "the film premiered at a festival in {year}",
          "the cast includes several non-professional actors from {place}",
          "the music was recorded with a local orchestra in {place}",
          "the film is told in three chapters, each from a different point of view",
          "the sequel picks up ten years after the events of the first film")
_WHO = ("former soldiers", "local fishermen", "the band's surviving members", "nurses and doctors",
        "the victims' families", "retired miners", "street artists")
_ORD = ("first", "second", "third", "fourth", "fifth")


def _subj_target(r: random.Random) -> tuple[str, bool]:
    """A film element both labels talk about: (noun phrase, plural)."""
    name, name2 = r.sample(_NAMES, 2)
    return _pick(r, (
        (f"the romance between {name} and {name2}", False), (f"the scenes in {_pick(r, _PLACES)}", True),
        (f"{name}'s journey to {_pick(r, _PLACES)}", False), (f"the subplot about {_pick(r, _ROLES)}", False),
        (f"the final confrontation between {name} and {name2}", False), (f"the flashbacks to {name}'s childhood", True),
        (f"the story of {_pick(r, _ROLES)}", False), (f"the opening sequence in {_pick(r, _PLACES)}", False),
        (f"{name}'s friendship with {_pick(r, _ROLES)}", False), (f"the letters {name} writes to {name2}", True),
    ))


#: evaluative predicates (subjective) and factual predicates (objective) over the same targets
_SUBJ_EVAL = ("{be} {adj}", "never quite {works}", "{feels} {adj}", "{be} the best part of the film",
              "{be} handled with real {care}", "{be} more {adj} than {it} has any right to be",
              "{be} where the film finally comes alive", "{be} where the movie loses its way",
              "deserve{s} a better film", "{be} oddly {adj}", "{be} too {adj} to take seriously",
              "{be} worth the price of admission", "will stay with you", "{be} a bit of a mess")
_SUBJ_FACT = ("{be} shot in {place} in {n} days", "{be} based on the director's own childhood",
              "take{s} up the last twenty minutes", "{be} told through flashbacks", "begin{s} in {year}",
              "{be} narrated by {name2}'s daughter", "{be} set during the war", "end{s} in {place}",
              "{be} added after test screenings", "{be} filmed on location in {place}",
              "introduce{s} {role} who {plot_vp}", "{be} cut from the television version")
_SUBJ_HEDGES = ("", "", "", "i think ", "frankly, ", "to be honest, ", "it seems to me that ", "sadly, ",
                "for my money, ", "admittedly, ")
_SUBJ_OPINIONS = (  # stand-alone opinion sentences (with plot words)
    "i can't imagine anyone caring whether {name} {plot_vp}",
    "the film is too {adj} for its own good",
    "what {a_adj} way to tell the story of {role}",
    "it's hard not to root for {name}, even when {name} {plot_vp}",
    "the idea that {role} {plot_vp} is {adj}, and the film knows it",
    "you'll either love {name} or want to strangle {name}",
    "somewhere inside this {adj} movie about {role} is a good film trying to get out",
    "{role} who {plot_vp} has never been this {adj} on screen",
    "i find {name}'s {thing} {adj}",
    "as {role}, {name} is {adj}",
    "the actor playing {role} is {adj}",
    "everything about {name}'s {thing} feels {adj}",
)
_SUBJ_FACTS = (  # stand-alone objective sentences (with evaluative-looking words inside the plot)
    "{name}, {role} from {place}, {plot_vp}",
    "when {twist}, {name} {plot_vp}",
    "the {kind} follows {role} who {plot_vp}",
    "set in {place}, the story centers on {role} who {plot_vp}",
    "{name} {plot_vp}, but {twist}",
    "after a {adj} review ends his career, {role} {plot_vp}",
    "{name} writes {a_adj} novel about {role} who {plot_vp}",
    "the film was shot in {place} over {n} weeks",
    "the documentary features interviews with {who}",
    "it is the director's {ord} feature and the first set in {place}",
    "{name} thinks {name2}'s {thing} is {adj}",
    "{name}'s boss calls the {thing} {adj}",
    "{role} complains that the {thing} is {adj}",
    "{name} finds {name2}'s {thing} {adj} and {plot_vp}",
    "the critics in the story call {name}'s {thing} {adj}",
) + _FACTS


def _subj_fill(r: random.Random, frame: str, plural: bool = False) -> str:
    d = _MOVIE
    pol = r.randrange(2)
    return frame.format(
        be="are" if plural else "is", s="" if plural else "s", it="they" if plural else "it",
        works="work" if plural else "works", feels="feel" if plural else "feels",
        adj=d.generic_adj(r, pol), a_adj=_a(d.generic_adj(r, pol)),
        care=_pick(r, ("care", "tenderness", "wit", "restraint")), place=_pick(r, _PLACES),
        n=_pick(r, ("six", "eight", "ten", "twelve", "forty")), year=r.randint(1920, 1999),
        name=_pick(r, _NAMES), name2=_pick(r, _NAMES), role=_pick(r, _ROLES),
        plot_vp=_pick(r, _PLOT_VPS).format(place=_pick(r, _PLACES)), twist=_pick(r, _PLOT_TWISTS),
        kind=_pick(r, ("film", "story", "movie", "drama", "comedy")), who=_pick(r, _WHO), ord=_pick(r, _ORD),
        thing=_pick(r, ("novel", "plan", "cooking", "singing", "painting", "new play", "business idea", "poem")))


def _gen_subj(r: random.Random, y: int):
    """Subjective (0) and objective (1) sentences about the same film elements; label = evaluative or factual."""
    if r.random() < 0.55:
        target, plural = _subj_target(r)
        pred = _subj_fill(r, _pick(r, _SUBJ_EVAL if y == 0 else _SUBJ_FACT), plural)
        text = f"{_pick(r, _SUBJ_HEDGES) if y == 0 else ''}{target} {pred}"
    else:
        text = _subj_fill(r, _pick(r, _SUBJ_OPINIONS if y == 0 else _SUBJ_FACTS))
    return text + " .", None


# ==============================================================================================================
# TREC: questions of six answer types
# ==============================================================================================================
_T_PEOPLE = ("Galileo", "Marie Curie", "Abraham Lincoln", "Mozart", "Cleopatra", "Charles Darwin", "Frida Kahlo",
             "Napoleon", "Jane Austen", "Nelson Mandela", "Thomas Edison", "Amelia Earhart", "Confucius", "Picasso")
_T_SITES = ("the Eiffel Tower", "the Great Wall", "the Golden Gate Bridge", "Stonehenge", "the Panama Canal",
            "the Taj Mahal", "the Colosseum", "the Hoover Dam", "the Statue of Liberty", "Big Ben")
_T_NATURE = ("the Nile", "Mount Everest", "Lake Victoria", "the Amazon", "the Sahara", "the Dead Sea",
             "the Grand Canyon", "Niagara Falls", "the Mississippi", "Mount Fuji")
_T_THINGS = ("a comet", "photosynthesis", "inflation", "a black hole", "jazz", "the stock market", "a vaccine",
             "an earthquake", "a rainbow", "democracy", "a solar eclipse", "the immune system", "a hurricane",
             "penicillin", "the telephone", "chess", "the printing press", "malaria")
_T_ACRO = (("NASA", "the National Aeronautics and Space Administration"), ("UNICEF", "the United Nations Children's Fund"),
           ("CPU", "central processing unit"), ("FBI", "the Federal Bureau of Investigation"),
           ("DNA", "deoxyribonucleic acid"), ("NATO", "the North Atlantic Treaty Organization"),
           ("AIDS", "acquired immune deficiency syndrome"), ("laser", "light amplification by stimulated emission"),
           ("UFO", "unidentified flying object"), ("WHO", "the World Health Organization"),
           ("GDP", "gross domestic product"), ("scuba", "self-contained underwater breathing apparatus"),
           ("CIA", "the Central Intelligence Agency"), ("radar", "radio detection and ranging"),
           ("IOC", "the International Olympic Committee"), ("BBC", "the British Broadcasting Corporation"),
           ("ATM", "automated teller machine"), ("HTML", "hypertext markup language"), ("IQ", "intelligence quotient"),
           ("MRI", "magnetic resonance imaging"), ("RSVP", "please reply"), ("SIM", "subscriber identity module"),
           ("GPS", "global positioning system"), ("UN", "the United Nations"), ("EU", "the European Union"),
           ("PIN", "personal identification number"), ("LED", "light-emitting diode"), ("USB", "universal serial bus"),
           ("OPEC", "the Organization of the Petroleum Exporting Countries"), ("ZIP code", "zone improvement plan code"))
_T_ORGS = ("NASA", "UNICEF", "the FBI", "NATO", "the WHO", "the CIA", "the IOC", "the BBC", "the UN", "the EU", "OPEC")
_T_FIELDS = ("computing", "medicine", "the army", "aviation", "banking", "sports", "politics", "texting")


def _t_person(r: random.Random) -> str:
    """A person, by name or by a description that carries other answer types' keywords."""
    if r.random() < 0.6:
        return _pick(r, _T_PEOPLE)
    return _pick(r, (f"the man who built {_pick(r, _T_SITES)}", f"the woman who discovered {_pick(r, _T_THINGS)}",
                     f"the scientist who explained {_pick(r, _T_THINGS)}", f"the first person to cross {_pick(r, _T_NATURE)}",
                     f"the explorer who mapped {_pick(r, _T_NATURE)}", f"the founder of {_pick(r, _T_ORGS)}",
                     f"the author who was born in {r.randint(1700, 1950)}", f"the engineer who designed {_pick(r, _T_SITES)}"))


def _t_place(r: random.Random, kind: str = "any") -> str:
    if kind == "site" or (kind == "any" and r.random() < 0.4):
        return _pick(r, _T_SITES)
    if r.random() < 0.7 or kind == "nature":
        return _pick(r, _T_NATURE)
    return _pick(r, (f"the city where {_pick(r, _T_PEOPLE)} was born", f"the country that invented {_pick(r, _T_THINGS)}",
                     f"the town where {_pick(r, _T_PEOPLE)} died"))


def _t_thing(r: random.Random) -> str:
    if r.random() < 0.7:
        return _pick(r, _T_THINGS)
    return _pick(r, (f"the disease that killed {_pick(r, _T_PEOPLE)}", f"the invention that made {_pick(r, _T_PEOPLE)} famous",
                     f"the storm that hit {_pick(r, _T_NATURE)} in {r.randint(1900, 2000)}"))


#: question frames per answer type; slots: {person} {site} {nature} {place} {thing} {thing2} {acro} {full} {org}
#: {year} {field} {word}
_TREC_FRAMES: dict[int, tuple[str, ...]] = {
    0: (  # DESC: definitions, reasons, manners
        "What is {thing} ?", "What does the word {word} mean ?", "Why does {place} attract so many visitors ?",
        "How does {thing} work ?", "What causes {thing} ?", "Why did {person} leave home in {year} ?",
        "How did {person} become famous ?", "What is the difference between {thing} and {thing2} ?",
        "What happens during {thing} ?", "How do you explain {thing} to a child ?", "Why is {place} important ?",
        "What is the origin of the name {site} ?", "How was {nature} formed ?", "What was {person} known for ?",
        "Why did {person} build a copy of {site} ?", "How do scientists measure {thing} ?",
        "What does {org} do ?", "Why is {nature} called that ?"),
    1: (  # ENTY: things, animals, colors, instruments, foods, languages, ...
        "What animal lives near {nature} ?", "What instrument did {person} play ?", "What color is {site} ?",
        "What language did {person} speak ?", "Which disease did {person} die of ?",
        "What was {person} 's favorite food ?", "What sport is played near {place} ?",
        "What is the name of the ship that sailed to {nature} ?", "What kind of tree grows near {nature} ?",
        "Which book made {person} famous ?", "What material is {site} made of ?",
        "What prize did {person} win in {year} ?", "What is the name of {person} 's horse ?",
        "What fish live in {nature} ?", "What did {person} invent ?", "Which vehicle did {person} use to cross {nature} ?",
        "What plant is used to make {thing} ?", "What currency was used where {person} lived ?"),
    2: (  # ABBR
        "What does {acro} stand for ?", "What is the abbreviation for {full} ?", "What is {acro} short for ?",
        "What is the full form of {acro} ?", "What is the acronym for {full} ?",
        "{acro} is an abbreviation for what ?", "What do the letters {acro} stand for ?",
        "What is the expansion of {acro} ?", "How is {full} usually abbreviated ?",
        "What does the abbreviation {acro} mean ?", "What did {acro} stand for in {year} ?",
        "Which abbreviation is used for {full} ?", "In {field} , what does {acro} stand for ?",
        "What does {acro} stand for in {field} ?", "What do people in {field} mean by {acro} ?",
        "What is the long form of the abbreviation {acro} ?", "What abbreviation did {person} use for {full} ?"),
    3: (  # HUM: people, groups
        "Who built {site} ?", "Who was {person} ?", "Which scientist first studied {thing} ?",
        "What is the name of the man who discovered {nature} ?", "Who painted {site} in {year} ?",
        "Who taught {person} ?", "Which company built {site} ?", "Name the woman who explained {thing} .",
        "Who wrote the first book about {thing} ?", "What is the name of the team that climbed {nature} ?",
        "Who named {nature} ?", "What explorer first reached {nature} ?", "Who paid for the study of {thing} ?",
        "Who founded {org} ?", "Who was the leader of {org} in {year} ?", "Whom did {person} marry ?"),
    4: (  # LOC
        "Where is {site} ?", "Where was {person} born ?", "What country is {nature} in ?",
        "What city did {person} die in ?", "In what state is {site} located ?", "Which river flows near {site} ?",
        "Where was {thing} first described ?", "What continent is {nature} on ?", "Where did {person} study ?",
        "Where did {person} go in {year} ?", "What is the capital city closest to {nature} ?",
        "Where does {nature} end ?", "From what port did {person} sail ?", "Where is the headquarters of {org} ?",
        "Where was {thing} first discovered ?", "What mountain range is near {place} ?"),
    5: (  # NUM: counts, dates, sizes, money, durations
        "How many people visit {place} each year ?", "When was {person} born ?", "What year did {person} die ?",
        "How tall is {site} ?", "How far is {site} from {nature} ?", "How long is {nature} ?",
        "How much did it cost to build {site} ?", "How old was {person} in {year} ?",
        "What is the population near {nature} ?", "How often does {thing} happen ?",
        "When was {thing} discovered ?", "How many children did {person} have ?",
        "What percentage of people believe in {thing} ?", "How fast does {thing} spread ?",
        "How long did it take to build {site} ?", "How many members did {org} have in {year} ?",
        "When did {org} start ?", "How deep is {nature} ?"),
}
_TREC_WORDS = ("serendipity", "nostalgia", "quixotic", "deja vu", "karma", "zeitgeist", "hubris", "schadenfreude")


def _gen_trec(r: random.Random, y: int):
    """A question whose answer type is the label; entity slots are filled with names *or* descriptions that
    carry other types' keywords ("the man who built ...", "the city where ... was born", "in 1905")."""
    acro, full = _pick(r, _T_ACRO)
    q = _pick(r, _TREC_FRAMES[y]).format(
        person=_t_person(r), site=_pick(r, _T_SITES), nature=_t_place(r, "nature"), place=_t_place(r),
        thing=_t_thing(r), thing2=_pick(r, _T_THINGS), acro=acro, full=full, word=_pick(r, _TREC_WORDS),
        year=r.randint(1800, 1999), field=_pick(r, _T_FIELDS), org=_pick(r, _T_ORGS))
    return _cap(q), None


# ==============================================================================================================
# AGNews: news headline + lead, four topics, with cross-topic vocabulary
# ==============================================================================================================
_AG_COUNTRIES = ("Iraq", "Sudan", "Ukraine", "Iran", "Pakistan", "Venezuela", "Nigeria", "Indonesia", "Haiti",
                 "North Korea", "Colombia", "Lebanon", "Nepal", "Georgia", "Brazil", "Japan", "Russia", "Kenya")
_AG_TEAMS = ("the Yankees", "Real Madrid", "the Lakers", "Arsenal", "the Red Sox", "Chelsea", "the Patriots",
             "Juventus", "the Celtics", "Bayern Munich", "the Eagles", "Manchester United")
_AG_PLAYERS = ("the veteran striker", "the star quarterback", "the world number one", "the rookie pitcher",
               "the Olympic champion", "the team captain", "the young goalkeeper", "the former champion")
_AG_FIRMS = ("General Motors", "Wal-Mart", "Citigroup", "Boeing", "Merck", "Exxon Mobil", "Nestle",
             "Delta Air Lines", "Kmart", "Pfizer", "Time Warner", "Ford", "Nike", "Coca-Cola")
_AG_TECH = ("Microsoft", "Google", "Intel", "Apple", "IBM", "Yahoo", "Oracle", "Nokia", "AMD", "Sony")
_AG_DAYS = ("on Monday", "on Tuesday", "on Wednesday", "on Thursday", "on Friday", "on Saturday", "on Sunday",
            "late on Sunday", "early on Friday", "last week", "this week")
_AG_SOURCES = ("officials said", "the company said", "a spokesman said", "according to a statement",
               "sources said", "reports said", "the Associated Press reported", "Reuters reported")

#: (headline, lead) frames per topic; {actor} slots draw from topic-specific and *shared* actor pools
_AG_FRAMES: dict[int, tuple[tuple[str, str], ...]] = {
    0: (  # World
        ("{country} rebels agree to ceasefire",
         "Rebel leaders in {country} agreed to a ceasefire {day} after weeks of fighting, {src}."),
        ("Election tension grows in {country}",
         "Opposition supporters marched through the capital {day} demanding a recount of the presidential vote."),
        ("UN envoy arrives in {country}",
         "A United Nations envoy arrived {day} to press the government of {country} to stop attacks on civilians."),
        ("Blast kills {n} in {country}",
         "A car bomb exploded in a crowded market in {country} {day}, killing at least {n} people, {src}."),
        ("{country} prime minister resigns",
         "The prime minister of {country} stepped down {day} after his coalition collapsed in a row over the "
         "budget."),
        ("Nuclear talks with {country} stall",
         "Diplomats said {day} that talks on the nuclear program of {country} had stalled, raising fears of "
         "sanctions."),
        ("Hostages freed in {country}",
         "Gunmen released {n} foreign hostages {day}, the foreign ministry of {country} said."),
        ("Flood victims wait for aid in {country}",
         "Thousands of families displaced by floods were still waiting for food and clean water {day}."),
        ("{country} and {country2} sign border pact",
         "The leaders of {country} and {country2} signed an agreement {day} ending a long dispute over their "
         "border."),
        ("{country} expels diplomats",
         "{country} ordered {n} diplomats from {country2} to leave the country {day}, accusing them of spying."),
        ("{country} bans opposition paper",
         "Authorities in {country} closed the country's largest opposition newspaper {day}, {src}."),
        ("Troops withdraw from {country} town",
         "Foreign troops began pulling out of a town in {country} {day} under a deal brokered by tribal elders."),
        ("{country} sends team to rescue miners",
         "{country} sent a rescue team {day} to help free {n} miners trapped by an explosion in {country2}."),
        ("{country} votes in tight race",
         "Voters in {country} went to the polls {day} in a close race dominated by worries about jobs and prices."),
    ),
    1: (  # Sports
        ("{team} rally to beat {team2}",
         "{player} scored twice in the second half as {team} came from behind to beat {team2} {day}."),
        ("{team} sign {player}", "{team} completed the signing of {player} {day}, ending weeks of speculation."),
        ("Injury sidelines {player}",
         "{player} will miss the rest of the season with a knee injury, {team} said {day}."),
        ("{team} fire coach after losing streak",
         "{team} dismissed their head coach {day} after a run of {n} straight defeats."),
        ("{player} wins in straight sets", "{player} needed just over an hour to reach the semifinals {day}."),
        ("{team} clinch title", "{team} wrapped up the championship {day} with a {score} win over {team2}."),
        ("Doping ban for {player}",
         "{player} was suspended for two years {day} after failing a drug test at the national trials."),
        ("{team} stadium deal approved",
         "City officials approved a new stadium for {team} {day}, keeping the club in town for thirty years."),
        ("{country} into World Cup final",
         "{country} beat {country2} {score} {day} to reach the final of the World Cup."),
        ("{firm} ends sponsorship of {team}",
         "{firm} will not renew its shirt deal with {team}, the club said {day}, leaving a gap in its budget."),
        ("{team} owner agrees to sell club",
         "The owner of {team} agreed {day} to sell the club to a group of investors for ${n}0 million."),
        ("{country} wins Olympic gold in relay",
         "{country} won gold in the relay {day}, beating {country2} by a fraction of a second."),
        ("{player} breaks scoring record", "{player} broke the league scoring record {day} as {team} beat {team2}."),
        ("Rain delays {team} game", "Heavy rain forced {team} to postpone their game against {team2} {day}."),
    ),
    2: (  # Business
        ("{firm} profit jumps {n} percent",
         "{firm} said {day} that quarterly profit rose {n} percent on strong sales, beating forecasts."),
        ("{firm} to cut {n},000 jobs",
         "{firm} will eliminate {n},000 jobs over two years to reduce costs, the company said {day}."),
        ("Oil prices climb on supply worries",
         "Crude oil prices rose {day} on concerns that unrest in {country} could disrupt exports."),
        ("{firm} agrees to buy rival",
         "{firm} agreed {day} to acquire a smaller rival for ${n} billion in cash and stock."),
        ("Stocks fall as rates rise",
         "Stocks fell {day} after the central bank raised interest rates for the {ord} time this year."),
        ("{firm} shares slide on weak outlook",
         "Shares of {firm} fell sharply {day} after the company cut its sales forecast for the year."),
        ("Dollar weakens against euro",
         "The dollar fell to a record low against the euro {day} as traders worried about the trade deficit."),
        ("{firm} settles lawsuit", "{firm} agreed {day} to pay ${n} million to settle a shareholder lawsuit, {src}."),
        ("{tech} profit falls short",
         "{tech} said {day} that profit fell {n} percent as sales of its computers slowed."),
        ("{country} central bank holds rates",
         "The central bank of {country} left interest rates unchanged {day}, citing rising prices."),
        ("{firm} to open {n} stores in {country}",
         "{firm} plans to open {n} stores in {country} next year as it expands overseas."),
        ("{tech} shares surge on deal talk",
         "Shares of {tech} jumped {day} on reports that it was in talks to buy a software maker."),
        ("Airline files for bankruptcy",
         "A major airline filed for bankruptcy protection {day}, blaming high fuel costs, {src}."),
        ("{firm} sales hurt by {team} boycott",
         "{firm} said {day} that a fan boycott linked to its {team} sponsorship had hurt sales."),
    ),
    3: (  # Sci/Tech
        ("{tech} unveils new chip",
         "{tech} introduced a faster processor {day} that uses less power, aimed at laptops and servers."),
        ("Water found on distant moon",
         "Scientists said {day} that a space probe had found signs of frozen water beneath the surface of a distant "
         "moon."),
        ("{tech} patches security flaw",
         "{tech} released a patch {day} for a flaw that could let hackers take control of a computer."),
        ("New virus spreads by e-mail",
         "A computer virus that spreads through e-mail attachments infected thousands of machines {day}, {src}."),
        ("Study links gene to memory",
         "Researchers have identified a gene that appears to play a role in long-term memory, according to a study "
         "published {day}."),
        ("{tech} launches music download service",
         "{tech} launched an online music store {day}, offering songs for 99 cents each."),
        ("Probe sends back first comet images",
         "A space probe sent back its first close-up pictures of a comet {day}, scientists said."),
        ("{tech} and {tech2} team up on search",
         "{tech} and {tech2} said {day} they would work together on web search software."),
        ("{country} launches weather satellite",
         "{country} launched its first weather satellite {day}, the national space agency said."),
        ("Scientists in {country} clone calf",
         "Researchers in {country} said {day} they had cloned a calf using a new technique."),
        ("{tech} releases new operating system",
         "{tech} released a new version of its operating system {day} with better protection against viruses."),
        ("Sensors help {team} track players",
         "{team} are testing wireless sensors that track players' heart rates, a new use for the technology."),
        ("Hackers hit {firm} web site",
         "Hackers broke into a web site run by {firm} {day} and stole customer passwords, {src}."),
        ("Fossil find rewrites dinosaur story",
         "Scientists digging in {country} found a fossil that suggests some dinosaurs had feathers."),
    ),
}
#: cross-topic context sentences appended to about 40% of the stories: vocabulary of *another* topic
_AG_CONTEXT = ("Oil prices rose in early trading after the news.", "Markets in the region were closed for a holiday.",
               "The national football league postponed its weekend games.", "Shares of the company rose 3 percent.",
               "The event was streamed live on the internet.", "Security was tight after threats by militants.",
               "The announcement came as the government prepared for elections.",
               "Analysts said the news could hurt profits next year.", "Scientists had warned of the risk for years.",
               "The president is expected to comment on Monday.", "Sponsors including a major bank were present.",
               "The software used by the league was also affected.")


def _gen_agnews(r: random.Random, y: int):
    """Headline + lead of one topic's story; shared actors (countries, firms, teams, tech companies appear under
    several topics) and a cross-topic context sentence 40% of the time."""
    team, team2 = r.sample(_AG_TEAMS, 2)
    tech, tech2 = r.sample(_AG_TECH, 2)
    country, country2 = r.sample(_AG_COUNTRIES, 2)
    head, lead = _pick(r, _AG_FRAMES[y])
    fill = dict(country=country, country2=country2, day=_pick(r, _AG_DAYS), n=r.randint(3, 40), team=team,
                team2=team2, player=_pick(r, _AG_PLAYERS), firm=_pick(r, _AG_FIRMS), tech=tech, tech2=tech2,
                score=_pick(r, ("2-1", "3-0", "24-17", "98-91", "1-0")), ord=_pick(r, ("second", "third", "fourth")),
                src=_pick(r, _AG_SOURCES))
    text = f"{_cap(head.format(**fill))}. {_cap(lead.format(**fill))}"
    if r.random() < 0.4:
        text += " " + _pick(r, _AG_CONTEXT)
    return text, None


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


# ==============================================================================================================
# registry, generation and splits
# ==============================================================================================================
GENERATORS: dict[str, Gen] = {
    "SST-2": _gen_sst2,
    "MR": _gen_mr,
    "CR": _gen_cr,
    "Yelp": _gen_yelp,
    "IMDb": _gen_imdb,
    "MPQA": _gen_mpqa,
    "Subj": _gen_subj,
    "TREC": _gen_trec,
    "AGNews": _gen_agnews,
    "QNLI": _gen_qnli,
    "SNLI": _gen_snli,
    "MNLI": _gen_mnli,
    "RTE": _gen_rte,
    "MRPC": _gen_mrpc,
    "QQP": _gen_qqp,
}

_SENT_RULE = ("Label rule: the polarity of the *main* clause. Forms: a plain aspect judgement (\"the pacing was "
              "brisk\"), a negated opposite (\"far from dull\" is positive, \"hardly brilliant\" negative), a contrast "
              "whose main clause wins (\"X, but Y\", \"although X, Y\", \"Y, even though X\"), two agreeing clauses, a "
              "verdict after a contrary clause, or a neutral distractor sentence plus a judgement.")

#: how each generated task is built (markdown; printed by the book via :func:`describe`)
DESCRIPTIONS: dict[str, str] = {
    "SST-2": "**SST-2** (generated): one- or two-clause movie-review sentences. " + _SENT_RULE +
             " Vocabulary: 18 film aspects with their own adjectives, graded generic adjectives, whole-film verb "
             "phrases (\"dragged on forever\", \"won me over completely\") and intensifiers.",
    "MR": "**MR** (generated): critic snippets about movies, half full sentences as in SST-2 and half noun phrases "
          "(\"a terrific thriller with an abysmal opening\", \"a film that is far from abysmal\", \"for all its "
          "flaws, a wonderful drama\"); the head noun phrase carries the label. " + _SENT_RULE,
    "CR": "**CR** (generated): customer reviews of electronics (battery life, screen, zoom, customer support, ...) "
          "with product-specific adjectives and verb phrases (\"keeps freezing\", \"was worth every penny\"). "
          + _SENT_RULE,
    "Yelp": "**Yelp** (generated, OOD partner of SST-2): restaurant reviews (service, food, staff, prices, dishes) "
            "built with the same rules as SST-2 but a disjoint domain vocabulary. " + _SENT_RULE,
    "IMDb": "**IMDb** (generated, OOD partner of SST-2): longer movie reviews (about 45 words): a neutral opening, "
            "three or four judgement sentences of which at most one disagrees with the label, a third of them "
            "contrast sentences, and a closing \"overall, ...\" judgement with the label, "
            "often negated. The label is recoverable from the first 64 tokens.",
    "MPQA": "**MPQA** (generated): short opinion expressions from news (1-7 words, lower-case): adverb + opinion "
            "verb (\"sharply criticized\"), verb + neutral object, evaluative adjective / noun phrases, short "
            "clauses, and for a third a polarity flip that is used with content words of *both* polarities (\"not "
            "fair\" negative vs \"not illegal\" positive, \"no hope\" vs \"no threat\", \"refused to support\" vs "
            "\"refused to condemn\"), so no flipper is a keyword.",
    "Subj": "**Subj** (generated): sentences about films; subjective (label 0) = an evaluation, objective (1) = plot "
            "or production fact. Both labels talk about the *same* film elements (\"the romance between maria and "
            "tom\", \"the scenes in lisbon\") and plot sentences contain evaluative-looking words (\"a ruthless "
            "gangster\", \"a bitter custody battle\", a character who *calls* the novel dreadful); subjective ones "
            "are direct judgements, often hedged (\"frankly, ...\", \"i think ...\").",
    "TREC": "**TREC** (generated): questions labelled by answer type (DESC, ENTY, ABBR, HUM, LOC, NUM in LM-BFF order), "
            "about 100 question frames over a shared pool of people, sites, natural features, concepts and "
            "acronyms. Entity slots are often filled with descriptions that carry *other* types' cue words (\"the "
            "man who built the Eiffel Tower\", \"the city where Mozart was born\", \"in 1905\"), and many frames "
            "share openings (\"What is the name of ...\", \"What ... ?\", \"How ...\").",
    "AGNews": "**AGNews** (generated): headline + lead sentence of a news story about World, Sports, Business or "
              "Sci/Tech (14 story frames per topic). Countries, firms, teams and tech companies act under several "
              "topics (a country wins a World Cup game, a tech company reports profits, hackers hit a retailer), "
              "and 40% of the stories end with a context sentence in another topic's vocabulary.",
    "QNLI": "**QNLI** (generated): a question about one fact of a fictional landmark (built when, designed by whom, "
            "where, how tall, made of what, why closed, how many visitors, funded by whom) and a sentence. "
            "Entailment: the sentence states that fact. Not entailment: a sentence about the *same* landmark giving "
            "another fact (often of the same answer type, e.g. another year), the same fact about a second "
            "landmark, or a topical non-answer.",
    "SNLI": "**SNLI** (generated): image-caption scenes (\"A man in a red shirt is riding a bicycle down a city "
            "street.\"). Entailment: hypernyms of the agent / activity / setting or a negated other activity; "
            "neutral: unverifiable refinements (purpose, identity, mood); contradiction: another scene's activity, "
            "a negated own activity, or a swapped agent. Every activity phrase entails its own scene and contradicts "
            "the others, so hypothesis words are shared across labels.",
    "MNLI": "**MNLI** (generated): premises in four genres with their own style and vocabulary (government report, "
            "fiction, telephone speech, travel guide), each an agent-event-object-time clause. Entailment: "
            "hypernyms, the passive, \"did not <antonym>\"; neutral: an unverifiable manner / reason / repetition; "
            "contradiction: the antonym, another time, \"did not <verb>\", \"never\". Negation, times and additions "
            "appear under several labels.",
    "RTE": "**RTE** (generated, binary): news premises with embedded facts (a person's role at a company, its "
           "headquarters, an event with a number) plus a sentence about a rival company in another city. "
           "Entailment restates one fact; not entailment swaps the role, city, person or company, or states the "
           "event's opposite (the two members of each event pair occur in premises equally often).",
    "MRPC": "**MRPC** (generated, F1): two news sentences reporting a company fact (profit, jobs, settlement, "
            "sales, stores) with different wording, reporting verbs and word order. Equivalent: the same fact (the "
            "day sometimes dropped). Not equivalent: one substantive change (number, direction, company, day, or a "
            "claim only one sentence makes); directions and extra claims also occur in equivalent pairs.",
    "QQP": "**QQP** (generated, F1): Quora-style question pairs over 30 topics × 8 intents (learn fast, how to start, "
           "worth it, books, difficulty, age, money, teaching kids), 4 phrasings each. Duplicate: two phrasings of "
           "one intent; not duplicate: the same topic with another intent (two thirds) or the same intent about "
           "another topic.",
}


def _check(task: str) -> Gen:
    if task not in GENERATORS:
        raise KeyError(f"no generator for task {task!r}; generated tasks: {', '.join(GENERATORS)}")
    return GENERATORS[task]


def _stream(task: str, label: int, seed: int):
    """Endless stream of (text_a, text_b) for one label; a deterministic function of (task, label, seed)."""
    gen = _check(task)
    r = random.Random(f"repro.generated|{task}|{label}|{seed}")
    while True:
        yield gen(r, label)


def _key(a: str, b: str | None) -> str:
    return a if b is None else a + "\x1f" + b


def _is_test(key: str) -> bool:
    h = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(h, "little") % _TEST_EVERY == 0


def _per_label(n: int, c: int) -> list[int]:
    base, extra = divmod(n, c)
    return [base + (1 if i < extra else 0) for i in range(c)]


def _collect(task: str, label: int, seed: int, n: int, want_test: bool | None) -> list[Example]:
    """First ``n`` distinct examples of a label's stream routed to test (True), train (False) or either (None)."""
    out: list[Example] = []
    seen: set[str] = set()
    misses = 0
    for a, b in _stream(task, label, seed):
        if len(out) >= n:
            break
        key = _key(a, b)
        if want_test is not None and _is_test(key) != want_test:
            continue
        if key in seen and misses < 50 * (n + 10):  # the vocabulary is exhausted: accept repeats after a while
            misses += 1
            continue
        seen.add(key)
        out.append(Example(a, label, b))
    return out


def _interleave(task: str, seed: int, per_label: list[list[Example]], tag: str) -> list[Example]:
    out = [ex for group in per_label for ex in group]
    random.Random(f"repro.generated|{task}|{seed}|{tag}").shuffle(out)
    return out


def generate(task: str, n: int, seed: int = 0) -> list[Example]:
    """``n`` label-balanced examples of a generated task (shuffled; distinct texts while the vocabulary allows)."""
    _check(task)
    c = TASKS[task].num_labels
    groups = [_collect(task, lab, seed, m, None) for lab, m in enumerate(_per_label(n, c))]
    return _interleave(task, seed, groups, "all")


def train_test(task: str, n_train: int, n_test: int, seed: int = 0) -> tuple[list[Example], list[Example]]:
    """Disjoint, label-balanced ``(train pool, test)`` of sizes ``n_train`` and ``n_test`` (see module docstring)."""
    _check(task)
    c = TASKS[task].num_labels
    train = [_collect(task, lab, seed, m, False) for lab, m in enumerate(_per_label(n_train, c))]
    test = [_collect(task, lab, seed, m, True) for lab, m in enumerate(_per_label(n_test, c))]
    return _interleave(task, seed, train, "train"), _interleave(task, seed, test, "test")


def pool_size(task: str, k: int) -> int:
    """Train-pool size :func:`repro.data.load_task` asks for: POOL_FACTOR·k per label (≥ MIN_POOL_PER_LABEL)."""
    return TASKS[task].num_labels * max(POOL_FACTOR * int(k), MIN_POOL_PER_LABEL, 2 * int(k))


def describe(task: str) -> str:
    """How a generated task is built (markdown, for the book)."""
    _check(task)
    return DESCRIPTIONS.get(task, "")
