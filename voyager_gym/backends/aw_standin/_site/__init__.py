"""The stand-in's sys.path root (see voyager_gym.backends.aw_standin). Not meant to be imported as a package:
this file only makes packaging tools ship the `android_world` test double beneath it."""
