"""AndroidWorld's vocabularies and the random draws built on them, for SimDroid's parameter generators.

Facts carried over from AndroidWorld's user-data generation (its word lists, in its order, and its sequence of
`random` calls), written as our own code, so that a task seeded with the same instance seed draws the same
names, numbers, file names and sentences as AndroidWorld does. Order matters: `rng.choice` indexes into these
tuples.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import random
import string

# Family names first and given names second, as AndroidWorld draws them.
FAMILY_NAMES = (
    "Ahmed",
    "Ali",
    "Alves",
    "Chen",
    "Fernandez",
    "Ferreira",
    "Garcia",
    "Gonzalez",
    "Hernandez",
    "Ibrahim",
    "Li",
    "Liu",
    "Lopez",
    "Martin",
    "Mohamed",
    "Mohammed",
    "Muller",
    "Pereira",
    "Wang",
    "Zhang",
    "da Silva",
    "dos Santos",
)
GIVEN_NAMES = (
    "Abdullah",
    "Adam",
    "Ahmed",
    "Alejandro",
    "Ali",
    "Alice",
    "Amelia",
    "Amina",
    "Amir",
    "Ana",
    "Anna",
    "Aria",
    "Arthur",
    "Ava",
    "Camila",
    "Carlos",
    "Charlie",
    "Charlotte",
    "Daniel",
    "David",
    "Elias",
    "Ella",
    "Ema",
    "Emil",
    "Emilia",
    "Emily",
    "Emma",
    "Eva",
    "Fatima",
    "Freya",
    "Gabriel",
    "George",
    "Grace",
    "Hana",
    "Hannah",
    "Henry",
    "Hugo",
    "Ian",
    "Ibrahim",
    "Isabella",
    "Isla",
    "Ivan",
    "Jack",
    "James",
    "Jose",
    "Juan",
    "Laura",
    "Leo",
    "Leon",
    "Leonardo",
    "Liam",
    "Lily",
    "Lina",
    "Louis",
    "Luca",
    "Lucas",
    "Luis",
    "Luka",
    "Maria",
    "Mariam",
    "Mark",
    "Martin",
    "Martina",
    "Maryam",
    "Mateo",
    "Matteo",
    "Maya",
    "Mia",
    "Miguel",
    "Mila",
    "Mohammad",
    "Muhammad",
    "Nikola",
    "Noa",
    "Noah",
    "Nora",
    "Oliver",
    "Olivia",
    "Omar",
    "Oscar",
    "Petar",
    "Samuel",
    "Santiago",
    "Sara",
    "Sarah",
    "Sofia",
    "Sofija",
    "Sophia",
    "Sophie",
    "Theo",
    "Theodore",
    "Thiago",
    "Thomas",
    "Valentina",
    "Victoria",
    "William",
    "Willow",
)
# Short notes and sayings (Markor note bodies, SMS message bodies).
SENTENCES = (
    "Don't forget to water the plants while I'm away.",
    "Your dentist appointment is scheduled for 2 PM on Thursday.",
    "Lunch meeting with Sarah at 1 PM Cafe L'amour.",
    "The dog's vet appointment is next Monday at 11 AM.",
    "Parents' evening at school this Wednesday.",
    "Monthly budget meeting pushed to Friday.",
    "Pick up groceries: Milk and Bread and Apples.",
    "Gym membership renewal due on the 20th.",
    "The library book is due back on the 15th.",
    "Reminder to call Grandma for her birthday.",
    "Weekend plans: Hiking trip to Blue Mountain.",
    "Book club meets next Tuesday to discuss '1984'.",
    "Dry cleaning is ready for pick-up.",
    "Wedding anniversary on the 30th. Make reservations!",
    "Yoga class every Tuesday and Thursday at 6 PM.",
    "Hello, World!",
    "To be or not to be.",
    "A quick brown fox.",
    "Lorem Ipsum is simply dummy text.",
    "The night is dark and full of terrors.",
    "May the Force be with you.",
    "Elementary, my dear Watson.",
    "It's a bird, it's a plane.",
    "Winter is coming.",
    "The cake is a lie.",
    "Inconceivable!",
    "A journey of a thousand miles begins with a single step.",
    "I think, therefore I am.",
    "The early bird catches the worm.",
    "Ignorance is bliss.",
    "Actions speak louder than words.",
    "Beauty is in the eye of the beholder.",
    "Better late than never.",
    "Cleanliness is next to godliness.",
    "Don't cry over spilled milk.",
    "The pen is mightier than the sword.",
    "When in Rome, do as the Romans do.",
    "The squeaky wheel gets the grease.",
    "Where there is smoke, there is fire.",
    "You can't make an omelette without breaking a few eggs.",
)
# The sdcard's standard folders and the usual file names in each (files tasks, noise files).
FOLDER_FILES: dict[str, tuple[str, ...]] = {
    "Alarms": (
        "morning_alarm.mp3",
        "wake_up.mp3",
        "early_alarm.mp3",
        "daily_reminder.mp3",
        "weekend_alarm.mp3",
        "night_alarm.mp3",
        "early_bird.mp3",
        "fitness_reminder.mp3",
        "meditation_time.mp3",
    ),
    "Audiobooks": (
        "sci_fi_book.mp3",
        "history_lecture.mp3",
        "novel_chapter.mp3",
        "biography_audio.mp3",
        "mystery_novel.mp3",
        "self_help_guide.mp3",
        "adventure_story.mp3",
        "language_lessons.mp3",
        "childrens_fable.mp3",
    ),
    "DCIM": (
        "holiday_photos.jpg",
        "birthday_party.jpg",
        "wedding_event.jpg",
        "nature_pics.jpg",
        "road_trip.jpg",
        "graduation_ceremony.jpg",
        "first_day_school.jpg",
        "mountain_hike.jpg",
        "winter_holiday.jpg",
    ),
    "Documents": (
        "resume.pdf",
        "cover_letter.pdf",
        "annual_report.pdf",
        "meeting_notes.pdf",
        "project_plan.pdf",
        "expense_report.pdf",
        "invoice_details.pdf",
        "client_brief.pdf",
        "contract_agreement.pdf",
    ),
    "Download": (
        "setup_exe.exe",
        "sample_pdf.pdf",
        "test_download.zip",
        "image_file.png",
        "movie_trailer.mp4",
        "software_patch.exe",
        "ebook_reader.apk",
        "music_album.zip",
    ),
    "Movies": (
        "action_film.mp4",
        "romantic_comedy.mp4",
        "documentary.mp4",
        "horror_movie.mp4",
        "sci_fi_thriller.mp4",
        "animation_kids.mp4",
        "drama_series.mp4",
        "mystery_feature.mp4",
    ),
    "Music": (
        "rock_album.mp3",
        "jazz_song.mp3",
        "classical_music.mp3",
        "pop_hit.mp3",
        "electronic_dance.mp3",
        "folk_tunes.mp3",
        "hip_hop_beats.mp3",
        "opera_recordings.mp3",
    ),
    "Notifications": (
        "new_message.mp3",
        "app_alert.mp3",
        "system_notification.mp3",
        "calendar_event.mp3",
        "email_received.mp3",
        "weather_update.mp3",
        "traffic_info.mp3",
        "sports_score.mp3",
    ),
    "Pictures": (
        "selfie.jpg",
        "sunset.jpg",
        "beach_day.jpg",
        "city_night.jpg",
        "family_gathering.jpg",
        "pets_playing.jpg",
        "garden_blooms.jpg",
        "food_snapshot.jpg",
    ),
    "Podcasts": (
        "news_podcast.mp3",
        "tech_talk.mp3",
        "comedy_show.mp3",
        "health_series.mp3",
        "educational_content.mp3",
        "music_reviews.mp3",
        "political_discussion.mp3",
        "travel_tips.mp3",
    ),
    "Recordings": (
        "interview_recording.mp3",
        "lecture_capture.mp3",
        "memoir_audio.mp3",
        "meeting_audio.mp3",
        "brainstorm_session.mp3",
        "book_reading.mp3",
        "therapy_session.mp3",
        "personal_notes.mp3",
    ),
    "Ringtones": (
        "default_ringtone.mp3",
        "custom_tone.mp3",
        "vintage_bell.mp3",
        "modern_beep.mp3",
        "jazzy_ring.mp3",
        "funky_tune.mp3",
        "classic_music.mp3",
        "nature_sounds.mp3",
    ),
}
# Street addresses (SimpleSmsSendReceivedAddress).
ADDRESSES = (
    "123 Main St Girdwood, AK, 99587",
    "6 Elm St, Birmingham, AL, 35217",
    "789 E Oak St, Phoenix AZ 85006",
    "1011 S Maple St, Little Rock, AR, 72204",
    "1415 W Cedar Ave Denver, CO, 80223",
    "968 Spruce St, Hartford, CT, 06103",
    "1819 Birch Ct, Dover, DE, 19901",
    "2021 Poplar St, Atlanta, GA, 30340",
)
# File names are an adjective and a noun, then varied.
ADJECTIVES = (
    "quick",
    "happy",
    "silly",
    "brave",
    "kind",
    "clever",
    "gentle",
    "proud",
    "friendly",
    "funny",
    "curious",
    "smart",
    "bold",
    "calm",
    "fierce",
    "wise",
    "strong",
    "bright",
    "eager",
    "fancy",
    "helpful",
    "jolly",
    "lively",
    "neat",
    "polite",
    "sharp",
    "shy",
    "super",
    "tough",
    "witty",
    "active",
    "alert",
    "best",
    "busy",
    "cool",
    "fair",
    "fancy",
    "fine",
    "glad",
    "good",
    "great",
    "hot",
    "nice",
    "pretty",
    "proud",
    "ready",
    "real",
    "safe",
    "sure",
    "warm",
)
NOUNS = (
    "apple",
    "banana",
    "cat",
    "dog",
    "elephant",
    "fish",
    "guitar",
    "house",
    "island",
    "jacket",
    "king",
    "lion",
    "monkey",
    "nest",
    "ocean",
    "penguin",
    "queen",
    "rabbit",
    "snake",
    "tree",
    "umbrella",
    "violin",
    "watch",
    "xylophone",
    "yacht",
    "zebra",
    "ant",
    "bear",
    "cow",
    "deer",
    "eagle",
    "frog",
    "goat",
    "horse",
    "igloo",
    "jelly",
    "koala",
    "lamp",
    "mouse",
    "nurse",
    "owl",
    "pig",
    "quilt",
    "rose",
    "sun",
    "tiger",
    "unicorn",
    "vase",
    "wolf",
    "fox",
    "zebra",
)


def random_string(rng: random.Random, n: int) -> str:
    """`n` letters and digits."""
    return "".join(rng.choices(string.ascii_letters + string.digits, k=n))


def random_name(rng: random.Random) -> str:
    """'Given Family' (the family name is drawn first). AndroidWorld's `excluding` argument never excludes
    anything (its split has the pattern and the string swapped), so none is offered here."""
    family = rng.choice(FAMILY_NAMES)
    return f"{rng.choice(GIVEN_NAMES)} {family}"


def random_number(rng: random.Random) -> str:
    """+1 and ten digits (Simple SMS then adds no country code)."""
    return "+1" + "".join(rng.choice(string.digits) for _ in range(10))


def random_date_str(rng: random.Random) -> str:
    """A day of 2023 up to 14 October, as YYYY_MM_DD."""
    start = dt.date(2023, 1, 1)
    day = start + dt.timedelta(days=rng.randint(0, (dt.date(2023, 10, 14) - start).days))
    return day.strftime("%Y_%m_%d")


def random_october_2023_ts(
    rng: random.Random, start_day: int = 15, end_day: int = 31, start_hour: int = 0
) -> int:
    """Unix seconds of a whole hour in October 2023 (UTC, the device's zone): the day, then the hour."""
    day = rng.randint(start_day, end_day)
    hour = rng.randint(start_hour, 23)
    return int(dt.datetime(2023, 10, day, hour, tzinfo=dt.UTC).timestamp())


def modified_file_name(rng: random.Random, base: str) -> str:
    """A variant of `base`: a date, a random 4-character tag, or backup/copy/final/edited, as a prefix or a
    suffix of the stem (the extension stays last)."""
    kind = rng.choice(("date_prefix", "random_suffix", "fixed_suffix"))
    as_prefix = rng.choice((True, False))
    stem, ext = posixpath.splitext(base)
    if kind == "date_prefix":
        mod = random_date_str(rng)
    elif kind == "random_suffix":
        mod = random_string(rng, 4)
    else:
        mod = rng.choice(("backup", "copy", "final", "edited"))
    return f"{mod}_{stem}{ext}" if as_prefix else f"{stem}_{mod}{ext}"


def random_file_name(rng: random.Random) -> str:
    """adjective_noun, varied by `modified_file_name` (no extension)."""
    adjective = rng.choice(ADJECTIVES)
    return modified_file_name(rng, f"{adjective}_{rng.choice(NOUNS)}")



# -- information-retrieval setup (AndroidWorld fills an IR task's definition when it initializes it) ---------
IR_DATE_FORMAT = "%B %d %Y"  # "October 24 2023"
DEVICE_DATE = dt.date(2023, 10, 15)


def ir_date(text: str) -> dt.date:
    return dt.datetime.strptime(text, IR_DATE_FORMAT).date()


def date_phrasings(d: dt.date) -> list[str]:
    """The ways AndroidWorld may word date `d` in an IR goal, in its order: month and day, with the year,
    today/tomorrow/yesterday, the weekday and "this <weekday>" within a week ahead, "the <weekday> after next"
    within two, the weekday within a week back."""
    out = [d.strftime("%B %d"), d.strftime(IR_DATE_FORMAT)]
    delta = (d - DEVICE_DATE).days
    out += {0: ["today"], 1: ["tomorrow"], -1: ["yesterday"]}.get(delta, [])
    day = d.strftime("%A")
    if 0 < delta <= 7:
        out += [day, f"this {day}"]
    elif 7 < delta <= 14:
        out.append(f"the {day} after next")
    if -7 <= delta < 0:
        out.append(day)
    return out


def reword_dates(params: dict, rng: random.Random) -> None:
    """AndroidWorld's last step of IR setup, in place: every string param (but the seed) that reads as a date
    ("October 24 2023") becomes one of its phrasings, drawn in param order."""
    for key, value in params.items():
        if key == "seed" or not isinstance(value, str) or not value:
            continue
        try:
            d = ir_date(value)
        except ValueError:
            continue
        params[key] = rng.choice(date_phrasings(d))


class WithoutReplacement:
    """AndroidWorld's `{<param>_without_replacement}` fields: each draws one of the param's possible values
    that neither the task's params nor an earlier such field has taken."""

    def __init__(self, vocab: dict[str, tuple[str, ...]], params: dict[str, str]):
        self.left = {k: list(vs) for k, vs in vocab.items()}
        for k, values in self.left.items():
            # AndroidWorld removes the param's value from the pool twice over (once for the whole definition,
            # once more for its state), one occurrence each time: a value listed twice goes entirely.
            for _ in range(2):
                if params.get(k) in values:
                    values.remove(params[k])

    def draw(self, rng: random.Random, param: str) -> str:
        value = rng.choice(self.left[param])
        self.left[param].remove(value)
        return value
