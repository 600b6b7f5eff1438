"""Background text: how close a query comes to ordinary sentences about nothing in particular.

Cosine similarities of one model are not comparable across kinds of query: a long declarative
contract hypothesis sits closer to every sentence than a short question does, so the same best
cosine means "answered" for a question and "merely the same register" for a hypothesis. The mean
cosine of the query to a fixed set of everyday sentences (written for this purpose, on no
particular topic) is that query's baseline; the relevance model (segment/values.py) looks at how
far the best candidates rise above it.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from .base import Embedder

__all__ = ["BACKGROUND_SENTENCES", "background_similarity"]

BACKGROUND_SENTENCES = (
    "The weather stayed cold and wet for most of the week.",
    "Add the onions to the pan and cook them until they are soft.",
    "The team scored twice in the second half and won the match.",
    "Prices rose again last month, mostly because of energy costs.",
    "The museum is open every day except Monday.",
    "She moved to the city after finishing her studies.",
    "Please restart the application after installing the update.",
    "The river flooded the lower part of the village in spring.",
    "Most birds in the region migrate south before winter.",
    "The meeting has been moved to Thursday afternoon.",
    "He learned to play the piano as a child.",
    "The train was delayed by twenty minutes because of a signal fault.",
    "Our office will be closed during the public holiday.",
    "The soil in this area is rich and well suited to farming.",
    "A new bridge was built across the bay in the last century.",
    "The recipe calls for two cups of flour and one egg.",
    "Children under twelve must be accompanied by an adult.",
    "The company reported higher sales in its second quarter.",
    "The patient was given rest and plenty of fluids.",
    "The old castle sits on a hill above the town.",
    "You can change your password from the account settings page.",
    "The festival attracts thousands of visitors every summer.",
    "The engine needs to be serviced every ten thousand miles.",
    "Scientists measured the temperature of the lake each morning.",
    "The novel tells the story of a family over three generations.",
    "The road to the airport is closed for repairs this weekend.",
    "Water boils at a lower temperature at high altitude.",
    "The library lends books, films and music for free.",
    "The shop sells fresh bread and pastries every morning.",
    "Voters went to the polls to elect a new mayor.",
    "The painting was sold at auction for a record price.",
    "Regular exercise helps to improve sleep and mood.",
    "The printer on the second floor is out of paper.",
    "The hikers reached the summit just before sunset.",
    "The school added a new science laboratory this year.",
    "Heavy snow closed several mountain passes overnight.",
    "The orchestra performed works by three modern composers.",
    "The farmers harvested the wheat earlier than usual.",
    "Customers can return items within thirty days of purchase.",
    "The ship left the harbour at dawn with a full cargo.",
)

_means: weakref.WeakKeyDictionary[Embedder, np.ndarray] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def background_similarity(embedder: Embedder, query_vector: np.ndarray) -> float:
    """Mean cosine of the (unit) query vector to BACKGROUND_SENTENCES embedded by EMBEDDER.

    The sentences are embedded once per embedder (a fraction of a second) and kept as their mean
    vector: with unit rows, the mean of the dot products is the dot product with the mean.
    """
    with _lock:
        mean = _means.get(embedder)
        if mean is None:
            mean = embedder.embed_documents(list(BACKGROUND_SENTENCES)).astype(np.float64).mean(axis=0)
            _means[embedder] = mean
    return float(np.asarray(query_vector, dtype=np.float64) @ mean)
