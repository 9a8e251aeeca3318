"""The claim grammar's word classes: which words are auxiliaries, negations, heads of each
claim kind, cues of scope. `reducers/claims/grammar.py` reads sentences with them;
docs/claims.md lists them by kind. Words are lowercased token forms
(`reducers/claims/narrative.py`): contractions keep their apostrophe ("'ve", "n't" endings).
"""

from __future__ import annotations


def class_of(text: str) -> frozenset[str]:
    """A word class from a whitespace-separated list."""
    return frozenset(text.split())


BE = frozenset({"is", "are", "was", "were", "been", "be", "am", "'s", "'re", "'m", "got", "gets"})

HAVE = frozenset({"has", "have", "'ve", "had"})

MODAL = frozenset(
    {"will", "would", "should", "could", "can", "might", "may", "must", "shall", "'ll", "'d"}
)

# Words that may stand inside a verb group or between a subject and its head.
ADVERBS = frozenset(
    {
        "now",
        "all",
        "also",
        "just",
        "successfully",
        "fully",
        "already",
        "previously",
        "accidentally",
        "inadvertently",
        "mistakenly",
        "correctly",
        "properly",
        "finally",
        "independently",
        "still",
        "presumably",
        "probably",
        "apparently",
        "likely",
        "possibly",
        "supposedly",
        "completely",
        "officially",
        "both",
        "each",
        "indeed",
        "actually",
        "then",
        "again",
        "truly",
        "really",
        "thus",
        "cleanly",
        "perfectly",
        "entirely",
        "only",
        "safely",
        "directly",
        "here",
        "since",
        "`k",
    }
)

NEGATORS = frozenset(
    {"not", "no", "never", "nothing", "none", "neither", "nor", "without", "unable", "cannot"}
)

PRONOUNS = frozenset({"i", "we", "you", "it", "they", "he", "she", "everything", "this", "that"})

DETERMINERS = frozenset(
    {"the", "a", "an", "this", "that", "these", "those", "my", "our", "your", "its", "their"}
)

PREPOSITIONS = frozenset(
    {
        "of",
        "from",
        "in",
        "on",
        "at",
        "to",
        "for",
        "with",
        "by",
        "into",
        "onto",
        "about",
        "via",
        "over",
        "under",
        "after",
        "before",
        "during",
        "against",
        "as",
        "than",
        "per",
    }
)

CONJUNCTIONS = frozenset({"and", "or", "but", "&", "+", "nor", "so", "yet"})

WH = frozenset({"what", "why", "how", "where", "who", "whom", "whose"})

# Subordinators whose clause is a condition or a time not yet reached (or not this run's).
SUBORDINATORS = frozenset(
    {"if", "unless", "once", "when", "whenever", "until", "whether", "before", "after", "lest"}
)

CONCESSIVE = frozenset({"although", "though"})

CONTRAST = frozenset({"but", "however", "although", "though", "whereas", "while", "yet"})

# Hard clause boundaries (tokens): nothing scopes across them.
HARD = frozenset({";", ":", "(", ")", "[", "]", "|", "-", "\u2192", "\u00b7", "="})

GENERIC = frozenset(
    {"automatically", "always", "usually", "typically", "generally", "normally"}
    | {"lazily", "eagerly", "asynchronously", "synchronously", "conditionally"}
)

PAST_CUES = frozenset({"earlier", "previously", "initially", "originally", "formerly", "prior"})

PARTIAL = frozenset({"partially", "partly", "mostly", "almost", "nearly", "half"})

FAILURE = frozenset(
    {
        "fail",
        "fails",
        "failed",
        "failing",
        "failure",
        "failures",
        "errored",
        "crashed",
        "broke",
        "broken",
        "rejected",
        "lost",
    }
)

# Base-form verbs that open an imperative sentence ("Verify the output…", "Run tests").
IMPERATIVES = class_of(
    """verify validate run mark check create add fix push merge send release trigger test
    review begin let give make update install deploy publish open close ensure execute
    monitor watch wait remove delete write use try go please see read connect skip
    implement build commit submit upload post apply provide include document configure
    consider refer follow rerun re-run retry restart start stop launch click navigate
    type enter select copy paste compile confirm set keep avoid call do"""
)

# Past forms a sentence may open with in a report ("Ran all unit tests", "Fixed …").
PAST_OPENERS = class_of("ran made wrote built sent set put got did found took gave kept read")

# Nouns that make a "completed successfully"/"ran" subject a verification, an effect or
# a durable record rather than a task.
VERIFY_NOUNS = class_of(
    """script scripts solution program test tests suite suites check checks build builds
    validation validations verification run runs ci pipeline lint linter linting
    typecheck stylecheck preflight"""
)

PUSH_NOUNS = frozenset(
    {"push", "deploy", "deployment", "release", "upload", "rollout", "apply", "provisioning"}
)

RECORD_NOUNS = frozenset({"commit", "merge"})

REMOTE_NOUNS = frozenset(
    {"pr", "prs", "pull", "issue", "issues", "ticket", "mr", "draft", "email", "message"}
    | {"post", "comment", "release", "notification", "tag"}
)

BRANCH_WORDS = frozenset(
    {"main", "master", "origin", "upstream", "branch", "changes", "`c", "`p", "develop", "trunk"}
)

# Completion heads that assert a result in any construction.
STRONG = class_of(
    """complete completed done finished fixed resolved solved fulfilled addressed ready
    installed closed"""
)

# Change verbs: a result only in the perfect passive ("has been generated"), in a
# first-person perfect that opens its clause ("I've created …"), or with
# "successfully" ("The PR successfully upgraded …").
WEAK = class_of(
    """added generated computed filled revised upgraded created analyzed analysed
    identified integrated licensed built achieved accomplished updated migrated
    refactored"""
)

WEAK_PASSIVE_EXCLUDED = frozenset({"created", "updated", "added"})

VERIFY_HEADS = class_of(
    """pass passes passed passing green verified validated tested confirmed successful
    succeeded succeeds ok satisfied"""
)

EFFECT_HEADS = class_of(
    """opens pushed uploaded sent emailed posted published deployed released shipped
    notified opened created filed merged submitted destroyed"""
)

PERSIST_HEADS = class_of(
    """committed saved written wrote stored persisted populated logged recorded merged
    versioned"""
)

# Effect heads that need a remote object (a PR, an issue) next to them to be effects.
NEEDS_REMOTE = frozenset({"opened", "opens", "created", "filed", "submitted", "merged"})

# "-ing" forms that report a result after a comma: ", thus resolving the issue".
RESULT_ING = frozenset({"resolving", "fixing", "addressing", "completing", "closing"})

# Present-tense heads, with the subjects that make them a claim about this run.
PRESENT_DEEDS = frozenset({"fixes", "addresses", "resolves", "completes", "implements", "closes"})

DEED_SUBJECTS = frozenset(
    {"this", "it", "which", "pr", "request", "change", "changes", "commit", "fix", "patch"}
)

REPORTERS = frozenset({"confirms", "shows", "verifies", "confirmed", "showed", "verified"})

REPORTER_SUBJECTS = frozenset(
    {"verification", "agent", "i", "we", "test", "tests", "testing", "check", "checks", "suite"}
    | {"run"}
)

# Heads that are adjectives, never verbs taking an object ("done status").
ADJECTIVAL = frozenset({"done", "complete", "ready"})

RUNNABLE = frozenset({"script", "scripts", "program", "solution", "test", "tests", "suite"})

# Edits that, made to a pull request or an issue, are effects on a remote.
REMOTE_EDITS = frozenset({"added", "updated", "applied", "labeled", "labelled", "edited"})

SOFT = frozenset({",", "and", "or", "but", "so", "because", "which", "that", "after"})

BE_HAVE = BE | HAVE

FINITE = BE | HAVE | MODAL

AUX_CHAIN = BE | HAVE | MODAL | PARTIAL | GENERIC | {"not", "never", "being"}

PAREN_HEADS = VERIFY_HEADS | STRONG

SUBJECT_NOUNS = VERIFY_NOUNS | PUSH_NOUNS | RECORD_NOUNS

OTHER_KIND_NOUNS = PUSH_NOUNS | RECORD_NOUNS

OPENERS = PAST_OPENERS | {"successfully"}

BRANCHY = BRANCH_WORDS | {"feature"}

CLAUSE_END = HARD | {","} | CONTRAST

RECORD_OR_EFFECT = EFFECT_HEADS | PERSIST_HEADS

NOT_NOUN = (
    (BE | HAVE | MODAL | ADVERBS | NEGATORS | DETERMINERS | PREPOSITIONS | CONJUNCTIONS | WH)
    | SUBORDINATORS
    | {"that", "which", "to", "there"}
)

VERB_FORMS = STRONG | WEAK | EFFECT_HEADS | PERSIST_HEADS | PAST_OPENERS | {"implemented"}

# Every word `_head` looks at: the rest cannot start a claim, and are passed over.
HEAD_WORDS = (
    STRONG
    | WEAK
    | VERIFY_HEADS
    | EFFECT_HEADS
    | PERSIST_HEADS
    | RESULT_ING
    | PRESENT_DEEDS
    | REPORTERS
    | REMOTE_EDITS
    | class_of("set out handed marked ready ran executed worked working works clean live")
    | class_of("serves implemented success broke")
)

NONE_VERBS = class_of(
    """push post send publish deploy release merge create open approve flip apply upload
    email notify file submit share"""
)

# The words a sentence-wide rule below starts from.
TRIGGERS = class_of(
    """commit hash sha working version merge did didn't have has haven't hasn't not no
    needs commits nothing zero `n rc=0 exit=0 code correctly ("""
)

NEW_SUBJECT = frozenset(
    {"i", "we", "you", "they", "it", "the", "this", "that", "everything", "all", "both"}
)

SETTINGS = DETERMINERS | {"i", "we", "it", "you"}

WISHES = frozenset(
    {"need", "needs", "needed", "want", "wants", "plan", "plans", "going", "have", "has"}
    | {"hope", "expect", "expects", "supposed", "try", "trying", "asked", "requested"}
)

CAN_REPORT = frozenset({"confirm", "verify", "see", "say", "report"})


# Irregular past participles (the regular ones end in "-ed").
IRREGULAR_PARTICIPLES = class_of(
    """done made set sent built run written taken given shown kept found held brought put
    split rebuilt rerun redone undone spun begun drawn grown thrown torn worn shut cut
    hidden rewritten overwritten reset paid sold bought"""
)

# Adverbs that say an act reached its result ("was successfully cancelled").
RESULT_ADVERBS = class_of("successfully fully cleanly")

# Adverbs that place a state in the present of the report ("is now live").
NOW_ADVERBS = class_of("now already currently finally fully successfully officially")

# Predicate adjectives and participles of a resulting state ("The server is running").
# Those in STRONG_STATES assert a result with any present "be"; the rest need "now".
STATE_WORDS = class_of(
    """running live functional operational healthy available online active synced
    safe stable accessible reachable correct valid accurate up-to-date consistent
    enabled configured installed connected secured protected restored intact
    published deployed merged resolved production-ready working place gone open"""
)

STRONG_STATES = class_of(
    "running live functional operational healthy online synced working place gone open"
)

# States that are what a check shows ("The calculation is correct", "… is healthy").
CHECK_STATES = class_of("healthy correct valid accurate consistent")

# States of a thing published or reachable outside the workspace.
REMOTE_STATES = class_of("live online published deployed")

# Hosting services a thing may be "on" ("Your changes are now on GitHub").
HOSTS = class_of(
    """github gitlab bitbucket vercel netlify heroku railway render fly aws s3 pypi npm
    dockerhub production staging origin"""
)

PRESENT_BE = frozenset({"is", "are", "'s", "'re", "am", "'m"})

# Labels whose value is a status ("Status: deployed", "Result: passed").
STATUS_LABELS = class_of("status state result results outcome overall verdict")
