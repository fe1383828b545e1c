"""TEST DOUBLE of AndroidWorld (google-research/android_world) driven by SimDroid; see
tests.aw_standin. It is not AndroidWorld and talks to no device."""

IS_VOYAGER_STANDIN = True
