"""Stand-in for Hugging Face datasets: load_dataset("rajpurkar/squad")
gives 2,000 fixed questions (SQuAD's own are not fetched: no network)."""

_SUBJECTS = ["the Normans", "Super Bowl 50", "oxygen", "the Amazon rainforest",
             "Nikola Tesla", "the Victoria and Albert Museum", "Kenya", "Warsaw"]
_ASKS = ["When did {} first appear in the record?", "What is {} best known for?",
         "Where is {} found, according to the passage?",
         "Who wrote about {} in the nineteenth century, and why did it matter?"]


def load_dataset(name):
    if name != "rajpurkar/squad":
        raise ValueError(f"stand-in datasets: only rajpurkar/squad, not {name!r}")
    questions = [
        _ASKS[i % len(_ASKS)].format(_SUBJECTS[(i // len(_ASKS)) % len(_SUBJECTS)])
        + ("" if i < 32 else f" (variant {i})")
        for i in range(2000)
    ]
    return {"train": {"question": questions}}
