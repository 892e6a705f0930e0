"""Generated topic tasks: TREC (questions of six answer types) and AGNews (news, four topics)."""

from __future__ import annotations

import random

from repro.data.generated._registry import generates
from repro.data.generated._text import cap as _cap, pick as _pick


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


@generates("TREC")
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


@generates("AGNews")
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
