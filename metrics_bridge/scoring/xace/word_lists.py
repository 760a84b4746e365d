"""Closed word classes the rule extractor uses beside its packaged lexicon (data/xace_lexicon.json)."""

VERBISH = {"VERB", "ING", "EDV"}
NP_PARTS = {"DET", "INT", "ADJ", "NOUN", "INGMOD", "POSS"}
CLAUSE_BREAKS = {"TEMP", "SEP", "CONJ", "STOP", "SOUNDOF"}
COLLECTIVE_HEADS = {"group", "crowd", "team", "family", "chorus", "choir", "audience", "couple"}
#: "speaks in a high-pitched voice": the adjectives of these heads describe the sound itself
MANNER_HEADS = {"voice", "tone", "manner", "way", "fashion", "pitch", "pace", "rhythm", "volume"}
#: "a piece of metal", "some type of machine": the "of" phrase names the source
PARTITIVE_HEADS = {"piece", "pieces", "type", "types", "kind", "sort", "bit", "bits", "set", "variety", "pile", "stack"}
GENERIC_HEADS = {"sound", "sounds", "noise", "audio", "recording", "clip", "it", "this", "track", "quality", "scene"}
SOUND_WORDS = {"sound", "sounds", "noise", "noises"}
MAKE_VERBS = {
    "make",
    "makes",
    "made",
    "making",
    "produce",
    "produces",
    "produced",
    "producing",
    "emit",
    "emits",
    "emitted",
    "emitting",
    "create",
    "creates",
    "creating",
    "give",
    "gives",
    "giving",
    "let",
    "lets",
}
PLURAL_NOUNS = {"people", "men", "women", "children", "police", "geese", "mice", "cattle", "folks"}
NUMBERLESS_NOUNS = {"sheep", "fish", "deer", "crowd", "audience", "group", "family", "team", "traffic", "water", "rain"}
THIRD_PERSON_SINGULAR_PRONOUNS = {"he", "she", "it", "someone", "somebody", "something", "one", "who", "which", "that"}
RESOLVABLE_PRONOUNS = {"it", "they", "he", "she", "them", "who", "which", "that"}
NUMBER_WORDS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twenty", "hundred"}
PARTICLES_ALWAYS = {"up", "away", "off", "out"}
PARTICLES_AT_END = {"by", "over", "past", "along", "around", "down"}
SPEECH_LEMMAS = {
    "speak",
    "talk",
    "say",
    "sing",
    "chat",
    "narrate",
    "whisper",
    "shout",
    "yell",
    "converse",
    "mumble",
    "murmur",
    "announce",
    "deliver",
    "laugh",
    "chatter",
    "communicate",
    "preach",
    "lecture",
    "argue",
}
MUSIC_WORDS = {"music", "song", "melody", "tune", "radio", "band", "orchestra"}
PERSON_WORDS = {
    "man",
    "woman",
    "person",
    "people",
    "boy",
    "girl",
    "child",
    "children",
    "kid",
    "baby",
    "men",
    "women",
    "someone",
    "somebody",
    "crowd",
    "group",
    "lady",
    "guy",
    "male",
    "female",
    "voice",
    "speaker",
    "audience",
}
ING_NOUNS = {
    "building",
    "ceiling",
    "evening",
    "morning",
    "thing",
    "something",
    "nothing",
    "anything",
    "everything",
    "king",
    "wing",
    "string",
    "spring",
    "swing",
    "clothing",
    "railing",
    "painting",
    "meeting",
    "lightning",
    "wedding",
    "pudding",
    "bedding",
    "siding",
    "awning",
    "opening",
    "ending",
    "beginning",
    "setting",
    "surroundings",
    "during",
    "ring",
    "sing",
    "bring",
}
WEATHER_LEMMAS = {"rain", "snow", "thunder", "hail", "drizzle", "pour", "storm"}
FILLER_WORDS = {"also", "just", "still", "even", "only", "again", "currently", "actually", "clearly", "audibly"}
