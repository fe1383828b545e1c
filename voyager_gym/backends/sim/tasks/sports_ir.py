"""OpenTracks information-retrieval tasks (AndroidWorld's SportsTracker* IR family).

As in AndroidWorld, the relevant activities are seeded among 20 random ones (started in the two weeks before
the device time) that never satisfy all of the task's exclusion conditions; distances go through the
miles-rounding AndroidWorld applies, and answers are checked by `check_answer` (distances within 10 m).
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.opentracks import MILE, PKG, TRACKS, parse_start
from voyager_gym.backends.sim.device import START_TIME, DeviceState
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    answer,
    back,
    check_answer,
    done,
    open_app,
    register_task,
    scroll,
)
from voyager_gym.backends.sim.tasks.joplin_ir import list_at_end

TODAY = START_TIME.date()
WEEK_START = dt.date(2023, 10, 9)  # Monday of the device's week
DATE_FMT = "%B %d %Y"

CATEGORIES = (
    "running",
    "cycling",
    "swimming",
    "hiking",
    "mountain biking",
    "kayaking",
    "skiing",
    "snow boarding",
    "skate boarding",
    "climbing",
    "inline skating",
    "sailing",
)
DURATIONS = (
    "15",
    "30",
    "45",
    "60",
    "90",
    "120",
    "40",
    "50",
    "75",
    "80",
    "20",
    "105",
    "135",
    "150",
    "165",
    "180",
    "210",
    "240",
    "270",
)
DISTANCES = (
    "100",
    "300",
    "500",
    "800",
    "1000",
    "1200",
    "1500",
    "2000",
    "2500",
    "3000",
    "3500",
    "4000",
    "4500",
    "5000",
    "6000",
    "7000",
    "8000",
    "9000",
    "10000",
    "12000",
)
START_TIMES = (
    "8:00am",
    "10:30am",
    "5:00pm",
    "6:30am",
    "9:45am",
    "2:15pm",
    "7:00am",
    "11:00am",
    "4:00pm",
    "1:30pm",
    "5:45pm",
    "6:15am",
    "7:30am",
    "3:45pm",
    "10:15am",
    "2:45pm",
    "8:45am",
    "9:15am",
    "12:00pm",
    "5:30pm",
)
ELEVATIONS = (
    "50",
    "100",
    "250",
    "150",
    "75",
    "300",
    "200",
    "400",
    "350",
    "450",
    "550",
    "600",
    "800",
    "700",
    "900",
    "1000",
    "650",
    "1100",
    "1200",
    "850",
)
NAMES = (
    "More tired than usual today",
    "Need more strength and conditioning",
    "Slow day",
    "Laps around the lake",
    "Trying and failing to keep up with John",
    "Quick outing",
    "Recovery day",
    "Active Rest Day",
    "Skill work",
    "Mindful Movement",
    "Outdoor Adventure",
    "Light Workout",
    "Intense day",
    "Quick Sweat",
    "Lunch Break Fitness",
)
DESCRIPTIONS = (
    "Great weather and good company.",
    "Felt strong the whole way.",
    "Took it easy and enjoyed it.",
    "Tried a new route today.",
    "Windy but worth it.",
    "Pushed the pace at the end.",
    "Legs were heavy from yesterday.",
    "Perfect conditions.",
)
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


def reword_date(date_str: str, rng: random.Random) -> str:
    """AndroidWorld's natural-language date: 'October 05', 'October 05 2023', today/yesterday or a weekday."""
    d = dt.datetime.strptime(date_str, DATE_FMT).date()
    options = [d.strftime("%B %d"), d.strftime(DATE_FMT)]
    if d == TODAY:
        options.append("today")
    if d == TODAY - dt.timedelta(days=1):
        options.append("yesterday")
    if d < TODAY and TODAY - d <= dt.timedelta(days=7):
        options.append(d.strftime("%A"))
    return rng.choice(options)


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
    speed = dist / max(total / 1000, 1)
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


def draw_activities(rng: random.Random, n: int, category: str, dates: list[str]) -> list[dict[str, str]]:
    """n relevant activities; names, times, durations, distances drawn without replacement (AndroidWorld)."""
    picks = {
        k: rng.sample(v, n)
        for k, v in (
            ("name", NAMES),
            ("description", DESCRIPTIONS),
            ("start_time", START_TIMES),
            ("duration", DURATIONS),
            ("distance", DISTANCES),
            ("elevation", ELEVATIONS),
        )
    }
    return [
        {"category": category, "start_date": dates[i], **{k: v[i] for k, v in picks.items()}}
        for i in range(n)
    ]


class _SportsIR(SimTask):
    app_names = ("open tracks sports tracker",)
    complexity = 1.0

    def excluded(self, t: dict[str, Any]) -> bool:
        """AndroidWorld's exclusion conditions: noise matching all of them would change the answer."""
        raise NotImplementedError

    def initialize(self, dev: DeviceState) -> None:
        rng = self.rng("tracks")
        tracks = []
        for a in self.params["activities"]:
            elev = int(a["elevation"])
            tracks.append(
                make_track(
                    dev,
                    a["name"],
                    a["description"],
                    a["category"],
                    relevant_start(a["start_date"], a["start_time"]),
                    float(a["duration"]),
                    float(a["distance"]),
                    elev,
                    elev,
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

    def expected(self) -> str:
        raise NotImplementedError

    tolerance = 0.0

    def is_successful(self, dev: DeviceState) -> float:
        # AndroidWorld compares |answer - expected| < tolerance for distances, so allow just under 10 m.
        return 1.0 if check_answer(dev.interaction_cache, self.expected(), self.tolerance) else 0.0

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
        for r in read_rows(view):
            rows[tuple(r.values())] = r
        seen = sorted(rows.values(), key=lambda r: r["start"], reverse=True)
        lst = view.scrollable()
        if lst is None or list_at_end(view, lst) or self.done_reading(seen):
            mem["answered"] = True
            return answer(self.compute(seen))
        return scroll("down", lst)


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


@register_task
class SportsTrackerActivitiesCountForWeek(_SportsIR):
    name = "SportsTrackerActivitiesCountForWeek"
    template = (
        "How many {category} activities did I do this week in the OpenTracks app? Assume the week starts "
        "from Monday. Express your answer as a single integer."
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        cat = rng.choice(CATEGORIES)
        week = [(WEEK_START + dt.timedelta(days=i)).strftime(DATE_FMT).replace(" 0", " ") for i in range(7)]
        return {"category": cat, "activities": draw_activities(rng, 2, cat, rng.sample(week, 2))}

    def excluded(self, t: dict[str, Any]) -> bool:
        d = dt.datetime.fromtimestamp(t["starttime"] / 1000, tz=dt.UTC).date()
        return self.params["category"] in t["category"].lower() and WEEK_START <= d <= TODAY

    def expected(self) -> str:
        return str(len(self.params["activities"]))

    def done_reading(self, rows: list[dict[str, Any]]) -> bool:
        return bool(rows) and rows[-1]["start"].date() < WEEK_START

    def compute(self, rows: list[dict[str, Any]]) -> str:
        cat = self.params["category"]
        return str(sum(1 for r in rows if r["category"] == cat and WEEK_START <= r["start"].date() <= TODAY))


@register_task
class SportsTrackerLongestDistanceActivity(_SportsIR):
    name = "SportsTrackerLongestDistanceActivity"
    template = (
        "What was the longest distance covered in a {category} activity in the OpenTracks app this week? "
        "Assume the week starts from Monday. Express your answer as a single number in meters rounded to "
        "the nearest integer."
    )
    tolerance = 9.999

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        cat = rng.choice(CATEGORIES)
        day = (WEEK_START + dt.timedelta(days=rng.randrange(7))).strftime(DATE_FMT).replace(" 0", " ")
        return {"category": cat, "activities": draw_activities(rng, 1, cat, [day])}

    def excluded(self, t: dict[str, Any]) -> bool:
        d = dt.datetime.fromtimestamp(t["starttime"] / 1000, tz=dt.UTC).date()
        target = rounded_distance(float(self.params["activities"][0]["distance"]))
        return (
            self.params["category"] in t["category"].lower()
            and t["totaldistance"] >= target
            and WEEK_START <= d <= TODAY
        )

    def expected(self) -> str:
        return str(rounded_distance(float(self.params["activities"][0]["distance"])))

    def done_reading(self, rows: list[dict[str, Any]]) -> bool:
        return bool(rows) and rows[-1]["start"].date() < WEEK_START

    def compute(self, rows: list[dict[str, Any]]) -> str:
        cat = self.params["category"]
        best = [r["miles"] for r in rows if r["category"] == cat and WEEK_START <= r["start"].date() <= TODAY]
        return str(_meters(max(best))) if best else "0"


@register_task
class SportsTrackerActivityDuration(_SportsIR):
    name = "SportsTrackerActivityDuration"
    template = (
        "How long was my {category} activity {date} in the OpenTracks app? Express your answer in minutes "
        "as a single integer."
    )
    DATES = tuple(dt.date(2023, 10, d).strftime(DATE_FMT).replace(" 0", " ") for d in range(5, 16))

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        cat, day = rng.choice(CATEGORIES), rng.choice(cls.DATES)
        acts = draw_activities(rng, 1, cat, [day])
        return {"category": cat, "date": reword_date(day, rng), "raw_date": day, "activities": acts}

    def excluded(self, t: dict[str, Any]) -> bool:
        d = dt.datetime.fromtimestamp(t["starttime"] / 1000, tz=dt.UTC).date()
        return d == _date(self.params["raw_date"]) and self.params["category"] in t["category"].lower()

    def expected(self) -> str:
        return self.params["activities"][0]["duration"]

    def _match(self, r: dict[str, Any]) -> bool:
        return r["category"] == self.params["category"] and r["start"].date() == _date(
            self.params["raw_date"]
        )

    def done_reading(self, rows: list[dict[str, Any]]) -> bool:
        return any(self._match(r) for r in rows)

    def compute(self, rows: list[dict[str, Any]]) -> str:
        return next((str(r["minutes"]) for r in rows if self._match(r)), "0")


@register_task
class SportsTrackerTotalDistanceForCategoryOverInterval(_SportsIR):
    name = "SportsTrackerTotalDistanceForCategoryOverInterval"
    complexity = 2.0
    template = (
        "What was the total distance covered for {category} activities in the OpenTracks app from "
        "{start_date} to {end_date}? Express your answer as a single number in meters rounded to the "
        "nearest integer."
    )
    tolerance = 9.999
    STARTS = tuple(dt.date(2023, 10, d).strftime(DATE_FMT).replace(" 0", " ") for d in range(1, 10))
    ENDS = tuple(dt.date(2023, 10, d).strftime(DATE_FMT).replace(" 0", " ") for d in range(10, 16))

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        cat, start, end = rng.choice(CATEGORIES), rng.choice(cls.STARTS), rng.choice(cls.ENDS)
        acts = draw_activities(rng, 2, cat, [start, start])
        return {
            "category": cat,
            "start_date": reword_date(start, rng),
            "end_date": reword_date(end, rng),
            "raw_start": start,
            "raw_end": end,
            "activities": acts,
        }

    def _in(self, d: dt.date) -> bool:
        return _date(self.params["raw_start"]) <= d <= _date(self.params["raw_end"])

    def excluded(self, t: dict[str, Any]) -> bool:
        d = dt.datetime.fromtimestamp(t["starttime"] / 1000, tz=dt.UTC).date()
        return self.params["category"] in t["category"].lower() and self._in(d)

    def expected(self) -> str:
        return str(sum(rounded_distance(float(a["distance"])) for a in self.params["activities"]))

    def done_reading(self, rows: list[dict[str, Any]]) -> bool:
        return bool(rows) and rows[-1]["start"].date() < _date(self.params["raw_start"])

    def compute(self, rows: list[dict[str, Any]]) -> str:
        cat = self.params["category"]
        return str(
            sum(_meters(r["miles"]) for r in rows if r["category"] == cat and self._in(r["start"].date()))
        )
