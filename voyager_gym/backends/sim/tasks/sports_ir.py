"""OpenTracks information-retrieval tasks (AndroidWorld's SportsTracker* IR family).

As in AndroidWorld, the relevant activities are seeded among 20 random ones (started in the two weeks before
the device time) that never satisfy all of the task's exclusion conditions; distances go through the
miles-rounding AndroidWorld applies, and answers are checked by `check_answer` as AndroidWorld checks them
(NUMBER matches: durations and counts exact, distances within |answer - expected| < 10 m).
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.opentracks import MILE, PKG, TRACKS, parse_start
from voyager_gym.backends.sim.device import START_TIME, DeviceState
from voyager_gym.backends.sim.tasks import ir_vocab, vocab
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    answer,
    back,
    done,
    open_app,
    register_task,
    scroll,
)
from voyager_gym.backends.sim.tasks.common import (
    Question,
    list_at_end,
)

TODAY = START_TIME.date()
WEEK_START = dt.date(2023, 10, 9)  # Monday of the device's week
DATE_FMT = "%B %d %Y"

# Categories of the noise activities (AndroidWorld's list) and our own name words for them.
NOISE_CATEGORIES = (
    "biking",
    "running",
    "hiking",
    "swimming",
    "walking",
    "skiing",
    "snowboarding",
    "kayaking",
    "rowing",
    "sailing",
    "skateboarding",
    "surfing",
    "climbing",
    "mountain biking",
    "road biking",
    "trail running",
    "trail hiking",
    "cycling",
    "paddling",
)
NOISE_WORDS = ("Morning", "Evening", "Lunch", "Weekend", "Easy", "Long", "Scenic", "Quick", "Afternoon")


def rounded_distance(meters: float) -> int:
    """AndroidWorld stores what the app shows: metres rounded to 0.01 mile and back to whole metres."""
    return round(round(meters / MILE, 2) * MILE)


def make_track(
    dev: DeviceState,
    name: str,
    desc: str,
    category: str,
    start: dt.datetime,
    minutes: float,
    meters: float,
    gain: int,
    loss: int,
) -> dict[str, Any]:
    start_ms = int(start.timestamp() * 1000)
    total = int(minutes * 60_000)
    dist = float(rounded_distance(meters))
    # AndroidWorld's setup stores distance / (milliseconds x 1000) as the average speed; no screen shows it
    speed = dist / (total * 1000) if total else 0.0
    return {
        "_id": dev.new_id(),
        "name": name,
        "description": desc,
        "category": category,
        "activity_type": category,
        "starttime": start_ms,
        "stoptime": start_ms + total,
        "totaltime": total,
        "movingtime": total,
        "totaldistance": dist,
        "avgspeed": speed,
        "avgmovingspeed": speed,
        "elevationgain": gain,
        "elevationloss": loss,
    }


def relevant_start(date_str: str, time_str: str) -> dt.datetime:
    d = dt.datetime.strptime(date_str, DATE_FMT).date()
    t = dt.datetime.strptime(time_str.upper(), "%I:%M%p").time()
    return dt.datetime.combine(d, t, tzinfo=dt.UTC)


# An activity's fields in AndroidWorld's fill order (its proto's field order), each from a task param or, with
# a leading "~", drawn without replacement from that param's vocabulary.
ACTIVITY_FIELDS = (
    "name",
    "description",
    "category",
    "start_date",
    "start_time",
    "duration",
    "distance",
    "elevation_gain",
    "elevation_loss",
)


def fill_activities(
    task: SimTask, rng: random.Random, n: int, sources: dict[str, str]
) -> list[dict[str, str]]:
    """The `n` relevant activities as AndroidWorld fills its definition: field by field, in order, from the
    params or (source "~<param>") drawn without replacement."""
    pool = vocab.WithoutReplacement(dict(ir_vocab.IR_PARAMS[task.name]), task.params)
    out = []
    for _ in range(n):
        a = {}
        for field in ACTIVITY_FIELDS:
            src = sources[field]
            a[field] = pool.draw(rng, src[1:]) if src.startswith("~") else task.params[src]
        out.append(a)
    return out


class _SportsIR(Question):
    app_names = ("open tracks sports tracker",)

    def excluded(self, t: dict[str, Any]) -> bool:
        """AndroidWorld's exclusion conditions: noise matching all of them would change the answer."""
        raise NotImplementedError

    n_activities = 1
    # where each activity field comes from (see `fill_activities`)
    sources: dict[str, str] = {}

    def initialize(self, dev: DeviceState) -> None:
        self.dates = {k: _date(v) for k, v in self.params.items() if k.endswith("date")}  # before rewording
        rng = random.Random(self.params.get("seed", 0))
        self.activities = fill_activities(self, rng, self.n_activities, self.sources)
        vocab.reword_dates(self.params, rng)
        rng = self.rng("tracks")
        tracks = []
        for a in self.activities:
            tracks.append(
                make_track(
                    dev,
                    a["name"],
                    a["description"],
                    a["category"],
                    relevant_start(a["start_date"], a["start_time"]),
                    float(a["duration"]),
                    float(a["distance"]),
                    int(a["elevation_gain"]),
                    int(a["elevation_loss"]),
                )
            )
        window0 = START_TIME - dt.timedelta(days=14)
        noise = []
        while len(noise) < 20:
            cat = rng.choice(NOISE_CATEGORIES)
            start = window0 + dt.timedelta(minutes=rng.randrange(14 * 24 * 60))
            t = make_track(
                dev,
                f"{rng.choice(NOISE_WORDS)} {cat}".title(),
                "",
                cat,
                start,
                rng.randrange(1, 300),
                rng.randint(0, 20000),
                rng.randint(0, 500),
                rng.randint(0, 500),
            )
            if not self.excluded(t):
                noise.append(t)
        tracks += noise
        rng.shuffle(tracks)
        dev.table(TRACKS).extend(tracks)

    # AndroidWorld's match: NUMBER_MATCH, exact unless a tolerance is set (|answer - expected| < 10 m for
    # distances), or STRING_MATCH for activity types.
    match = "number"

    # -- expert --------------------------------------------------------------------------------------------
    def done_reading(self, rows: list[dict[str, Any]]) -> bool:
        """True once the rows seen (newest first) reach past the dates the question covers."""
        raise NotImplementedError

    def compute(self, rows: list[dict[str, Any]]) -> str:
        raise NotImplementedError

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("answered"):
            return done()
        if view.app != PKG:
            return open_app("OpenTracks")
        if view.title != "OpenTracks":
            return back()
        rows: dict[tuple, dict[str, Any]] = mem.setdefault("rows", {})
        shown = read_rows(view)
        for r in shown:
            rows[tuple(r.values())] = r
        seen = sorted(rows.values(), key=lambda r: r["start"], reverse=True)
        lst = view.scrollable()
        if not mem.get("read") and not (lst is None or list_at_end(view, lst) or self.done_reading(seen)):
            mem["downs"] = mem.get("downs", 0) + 1
            return scroll("down", lst)
        mem["read"] = True
        # Read the answer off the screen: scroll back up while the rows it reads are above the screen, unless
        # they cannot all be shown at once (one already scrolled off below) or the list is back at its top.
        on_screen = {tuple(r.values()) for r in shown}
        need = {tuple(r.values()) for r in self.answer_rows(seen)}
        lost = need & (set(mem.get("visible", ())) - on_screen)
        if need <= on_screen or lost or lst is None or mem.get("ups", 0) >= mem.get("downs", 0):
            mem["answered"] = True
            return answer(self.compute(seen))
        mem["visible"] = list(need & on_screen)
        mem["ups"] = mem.get("ups", 0) + 1
        return scroll("up", lst)

    def answer_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows (of those read) the answer is read from, to show together before answering; none: answer
        where the reading stops."""
        return []


def read_rows(view: View) -> list[dict[str, Any]]:
    """The fully visible track rows: name, start, category, miles and minutes."""
    fields = {
        "trackListItemName": "name",
        "trackListItemDateTime": "start",
        "trackListItemCategory": "category",
        "trackListItemDistance": "miles",
        "trackListItemTotalTime": "minutes",
    }
    out, cur = [], None
    for e in view.elements:
        key = fields.get((e.resource_name or "").rsplit("/", 1)[-1])
        if key is None or not e.text:
            continue
        if key == "name":
            cur = {"name": e.text}
            out.append(cur)
        elif cur is not None:
            cur[key] = e.text
    rows = []
    for r in out:
        if len(r) == 5:
            h, m, _ = (int(x) for x in r["minutes"].split(":"))
            rows.append(
                {
                    "name": r["name"],
                    "start": parse_start(r["start"]),
                    "category": r["category"],
                    "miles": float(r["miles"].split()[0]),
                    "minutes": h * 60 + m,
                }
            )
    return rows


def _date(s: str) -> dt.date:
    return dt.datetime.strptime(s, DATE_FMT).date()


def _meters(miles: float) -> int:
    return round(miles * MILE)


# every activity field drawn from AndroidWorld's vocabulary ("~"), except the category the goal names; tasks
# override the fields their params fix
DRAWN_SOURCES = {
    "name": "~activity_name",
    "description": "~activity_description",
    "category": "category",
    "start_date": "~start_date",
    "start_time": "~start_time",
    "duration": "~duration",
    "distance": "~distance",
    "elevation_gain": "~elevation",
    "elevation_loss": "~elevation",
}


class _ThisWeek(_SportsIR):
    """A question on this week's activities of the goal's category: two of them drawn in the week, and no
    noise of that category in it."""

    n_activities = 2
    # the params (tasks/ir_vocab.py): the activities draw their own fields, see `sources`
    sources = DRAWN_SOURCES

    def excluded(self, t: dict[str, Any]) -> bool:
        d = dt.datetime.fromtimestamp(t["starttime"] / 1000, tz=dt.UTC).date()
        return self.params["category"] in t["category"].lower() and WEEK_START <= d <= TODAY

    def done_reading(self, rows: list[dict[str, Any]]) -> bool:
        return bool(rows) and rows[-1]["start"].date() < WEEK_START

    def this_week(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        cat = self.params["category"]
        return [r for r in rows if r["category"] == cat and WEEK_START <= r["start"].date() <= TODAY]


@register_task
class SportsTrackerActivitiesCountForWeek(_ThisWeek):
    template = (
        "How many {category} activities did I do this week in the OpenTracks app? Assume the week starts "
        "from Monday. Express your answer as a single integer."
    )

    def expected(self) -> str:
        return str(len(self.activities))

    def compute(self, rows: list[dict[str, Any]]) -> str:
        return str(len(self.this_week(rows)))


@register_task
class SportsTrackerTotalDurationForCategoryThisWeek(_ThisWeek):
    template = (
        "What was the total duration of {category} activities in the OpenTracks app this week? Assume the "
        "week starts from Monday. Express your answer in minutes as a single integer."
    )

    def expected(self) -> str:
        return str(sum(int(a["duration"]) for a in self.activities))

    def compute(self, rows: list[dict[str, Any]]) -> str:
        return str(sum(r["minutes"] for r in self.this_week(rows)))

    answer_rows = _ThisWeek.this_week


@register_task
class SportsTrackerLongestDistanceActivity(_SportsIR):
    template = (
        "What was the longest distance covered in a {category} activity in the OpenTracks app this week? "
        "Assume the week starts from Monday. Express your answer as a single number in meters rounded to "
        "the nearest integer."
    )
    tolerance = 10.0

    # the params (tasks/ir_vocab.py): the activity takes `distance`, draws the rest
    sources = {**DRAWN_SOURCES, "distance": "distance"}

    def excluded(self, t: dict[str, Any]) -> bool:
        d = dt.datetime.fromtimestamp(t["starttime"] / 1000, tz=dt.UTC).date()
        target = rounded_distance(float(self.activities[0]["distance"]))
        return (
            self.params["category"] in t["category"].lower()
            and t["totaldistance"] >= target
            and WEEK_START <= d <= TODAY
        )

    def expected(self) -> str:
        return str(rounded_distance(float(self.activities[0]["distance"])))

    def done_reading(self, rows: list[dict[str, Any]]) -> bool:
        return bool(rows) and rows[-1]["start"].date() < WEEK_START

    def answer_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        cat = self.params["category"]
        mine = [r for r in rows if r["category"] == cat and WEEK_START <= r["start"].date() <= TODAY]
        return [max(mine, key=lambda r: r["miles"])] if mine else []

    def compute(self, rows: list[dict[str, Any]]) -> str:
        best = self.answer_rows(rows)
        return str(_meters(best[0]["miles"])) if best else "0"


@register_task
class SportsTrackerActivityDuration(_SportsIR):
    template = (
        "How long was my {category} activity {date} in the OpenTracks app? Express your answer in minutes "
        "as a single integer."
    )

    # the params (tasks/ir_vocab.py): the activity takes them all but its elevations
    sources = {**DRAWN_SOURCES, "name": "activity_name", "description": "activity_description",
               "start_date": "date", "start_time": "start_time", "duration": "duration",
               "distance": "distance"}

    def excluded(self, t: dict[str, Any]) -> bool:
        d = dt.datetime.fromtimestamp(t["starttime"] / 1000, tz=dt.UTC).date()
        return d == self.dates["date"] and self.params["category"] in t["category"].lower()

    def expected(self) -> str:
        return self.activities[0]["duration"]

    def _match(self, r: dict[str, Any]) -> bool:
        return r["category"] == self.params["category"] and r["start"].date() == self.dates["date"]

    def done_reading(self, rows: list[dict[str, Any]]) -> bool:
        return any(self._match(r) for r in rows)

    def compute(self, rows: list[dict[str, Any]]) -> str:
        return next((str(r["minutes"]) for r in rows if self._match(r)), "0")


@register_task
class SportsTrackerTotalDistanceForCategoryOverInterval(_SportsIR):
    complexity = 2.0
    template = (
        "What was the total distance covered for {category} activities in the OpenTracks app from "
        "{start_date} to {end_date}? Express your answer as a single number in meters rounded to the "
        "nearest integer."
    )
    tolerance = 10.0

    n_activities = 2
    # the params (tasks/ir_vocab.py): both activities on `start_date`, the rest drawn
    sources = {**DRAWN_SOURCES, "start_date": "start_date"}

    def _in(self, d: dt.date) -> bool:
        return self.dates["start_date"] <= d <= self.dates["end_date"]

    def excluded(self, t: dict[str, Any]) -> bool:
        d = dt.datetime.fromtimestamp(t["starttime"] / 1000, tz=dt.UTC).date()
        return self.params["category"] in t["category"].lower() and self._in(d)

    def expected(self) -> str:
        return str(sum(rounded_distance(float(a["distance"])) for a in self.activities))

    def done_reading(self, rows: list[dict[str, Any]]) -> bool:
        return bool(rows) and rows[-1]["start"].date() < self.dates["start_date"]

    def compute(self, rows: list[dict[str, Any]]) -> str:
        cat = self.params["category"]
        return str(
            sum(_meters(r["miles"]) for r in rows if r["category"] == cat and self._in(r["start"].date()))
        )


@register_task
class SportsTrackerActivitiesOnDate(_SportsIR):
    complexity = 2.0
    template = (
        "What activities did I do {date} in the OpenTracks app? Answer with the activity type only. If there "
        "are multiple types, format your answer in a comma separated list."
    )

    n_activities = 2
    # the params (tasks/ir_vocab.py): both activities on `date`, categories and the rest drawn
    sources = {**DRAWN_SOURCES, "category": "~category", "start_date": "date"}

    def excluded(self, t: dict[str, Any]) -> bool:
        return dt.datetime.fromtimestamp(t["starttime"] / 1000, tz=dt.UTC).date() == self.dates["date"]

    match = "string"

    def expected(self) -> list[str]:
        return [a["category"] for a in self.activities]

    def done_reading(self, rows: list[dict[str, Any]]) -> bool:
        return bool(rows) and rows[-1]["start"].date() < self.dates["date"]

    def answer_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in rows if r["start"].date() == self.dates["date"]]

    def compute(self, rows: list[dict[str, Any]]) -> str:
        return ", ".join(dict.fromkeys(r["category"] for r in self.answer_rows(rows)))  # in screen order
