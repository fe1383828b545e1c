"""SmallPolicy: an element-pooled pointer model that trains in minutes on 2 CPU cores.

Instead of reading a token-level prompt, the policy reads structure: the goal as hashed word tokens (with
their character offsets and shapes: case, kind, and what touches each side, so a copied span finds the edges
of `"talk_edited.m4a"`), the last few actions, and every UI element as one vector (an EmbeddingBag over its
words plus flags and its box). The goal's tokens, each with a 5-wide convolution over its neighbours, are
encoded on their own (one transformer layer), then `[CLS] + history + elements` go through a small transformer
whose every layer also attends to the goal's tokens (a memory that does not depend on the screen: encoded once
per distinct goal of a batch, and kept while acting until the weights change, so an episode's steps and a
group's rollouts share it); heads pick each field of an AndroidWorld action: its type; an element (pointer)
and, for taps, where in it (its centre, an index action, or a point of a grid over its box: the far end of a
slider); a direction; a goal status; an app from the env's open_app vocabulary (`app_names`) or a name copied
from the goal ("the dialer app"); copied text for input_text and answers: a source (the goal, or an element's
label) and a token span in it, so typed text and answers can be read off the screen ("20" in "Attendance: 20
people"); and for answers that are lists, a Bernoulli per element whose labels are joined by ", " in element
order (an answer listing them in another order is the same answer: AndroidWorld compares list parts in any
order); computed answers count elements, read the quantity one element shows (minutes of a duration, meters of
a distance) or add those of a Bernoulli selection. A label is copyable over its first MAX_LABEL_TOKENS tokens
(a long note's every row). A value comes from CLS. The response is the usual `Reason: ... Action: {json}`
text, so the buffer, the env and the other policies never know the difference. `round_trip` encodes any action
as these targets and decodes it back (benchmarks/policy_coverage.py). With `memory=K` the policy also reads
the last K elements of the episode's earlier screens (`PolicyInput.seen`) after the screen's own, with their
own positions: a typed text, a span or a quantity may come from them, and so may a list's items and a sum's
terms (a list scrolled through); taps, typing targets and counts stay on the current screen. By default
(`memory_mode="encoder"`) they join the encoder's sequence; with `memory_mode="heads"` the encoder reads the
screen only, and the seen elements' states are their input vectors through a residual feed-forward layer,
read by the copy, list, quantity and sum heads alone (cheaper: the encoder's sequence does not grow; and what
earlier screens showed cannot change how an action on this screen is scored, except a copy from them).
(Reading them only as keys and values, like the goal, was cheaper but cloned worse: 0.731 against 0.786 on 20
demonstrations per task.)
Beyond the last `history` actions, the policy reads what the episode has done so far (a multi-entry goal's
steps differ only by which entries are entered, a playlist's by which files were added):
the texts typed and the labels of the elements acted on (`PolicyInput.acted`), in order, move a cursor over
the goal's tokens (`Featurizer.progress`); goal tokens done or past it key differently for the copy pointer,
each element knows whether its label was acted on and whether it is the goal's next listed item on the
screen, label tokens among the words typed earlier are flagged, and CLS reads how many actions of each type
were taken. A copied span's end reads how many line breaks, "|" separators or double quotes it crosses, and
goal and label tokens their column in a "|"-separated table (a row's fields end at separators, not at the
next line; a quoted title at its closing quote).

One idea a file, each importing only those before it: tokens.py (text as hashed tokens with offsets and
shapes), features.py (`Featurizer`: a `PolicyInput` as arrays), answers.py (how answers and typed text are
spelled from what the policy read), targets.py (an action as the heads' fields and back), batching.py
(`collate` and batch grouping), network.py (`PointerNet`), heads.py (every field's distribution), scoring.py
(a response's log-prob), policy.py (`SmallPolicy`).
"""

from algos.policies.small.answers import ANSWER_OPS
from algos.policies.small.batching import collate
from algos.policies.small.features import Featurizer
from algos.policies.small.network import LATER_PARAMETERS
from algos.policies.small.policy import SmallPolicy
from algos.policies.small.scoring import FLOOR_LOGPROB
from algos.policies.small.tokens import N_KIND, N_SHAPES, N_SIDE, token_shape

__all__ = ["ANSWER_OPS", "FLOOR_LOGPROB", "LATER_PARAMETERS", "N_KIND", "N_SHAPES", "N_SIDE", "Featurizer",
           "SmallPolicy", "collate", "token_shape"]
