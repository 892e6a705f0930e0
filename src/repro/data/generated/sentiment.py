"""Generated sentiment and subjectivity tasks: SST-2, MR, CR, Yelp, IMDb (reviews from three domains), MPQA
(opinion phrases from news), Subj (opinions vs plot / fact sentences)."""

from __future__ import annotations

import random

from repro.data.generated._registry import generates
from repro.data.generated._text import article as _a, pick as _pick, sentence as _sentence, weighted as _weighted


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


@generates("SST-2")
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


@generates("MR")
def _gen_mr(r: random.Random, y: int):
    return _mr_clause(r, y), None


@generates("CR")
def _gen_cr(r: random.Random, y: int):
    return _review(_PRODUCT, r, y, _CR_W), None


@generates("Yelp")
def _gen_yelp(r: random.Random, y: int):
    return _review(_RESTAURANT, r, y, _YELP_W), None


@generates("IMDb")
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


@generates("MPQA")
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


@generates("Subj")
def _gen_subj(r: random.Random, y: int):
    """Subjective (0) and objective (1) sentences about the same film elements; label = evaluative or factual."""
    if r.random() < 0.55:
        target, plural = _subj_target(r)
        pred = _subj_fill(r, _pick(r, _SUBJ_EVAL if y == 0 else _SUBJ_FACT), plural)
        text = f"{_pick(r, _SUBJ_HEDGES) if y == 0 else ''}{target} {pred}"
    else:
        text = _subj_fill(r, _pick(r, _SUBJ_OPINIONS if y == 0 else _SUBJ_FACTS))
    return text + " .", None
