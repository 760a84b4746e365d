"""The Huggins-pitch headphone test of Milne et al. (2021, Behav. Res. Methods 53:1551).

Each trial plays three 1 s bursts of white noise (0.5 s apart) and asks which one contains a faint
tone. In two bursts the main noise is the same in both ears. In the third, the right ear's main noise
has its phase inverted (shifted by pi) in a narrow band (+-6 % around the centre frequency, as in the
paper); the left ear's is unchanged. Over headphones the brain compares the ears and hears a faint
pitch at the centre frequency inside the noise (Huggins pitch); over loudspeakers the ears' signals mix
in the air and nothing stands out, so loudspeaker listeners are at chance (1 in 3). Six trials, pass at 5.

Built so that the answer is not in the file's levels either (an earlier version could be solved by
subtracting the channels: only the target burst had L - R != 0):
- every burst also carries background noise that is independent in the two ears, at least
  BACKGROUND_DB_MAX below the main noise, so L - R is never zero;
- its level is set per burst so that the two ears' correlation takes a value drawn per burst from the
  same range whatever the burst is (for the target, the inverted band's share of L - R is accounted
  for), and each ear of each burst is scaled to the same RMS. The RMS of L, R, L - R and L + R of a
  burst are then functions of that drawn value alone, so they are distributed alike in all three
  bursts: a level meter or a channel subtraction picks the target by chance (tests measure the
  identification rate of the RMS and peak of L, R, L - R and L + R over 300 trials);
- the band's centre frequency is drawn per trial (400-800 Hz, log-uniform), so there is no fixed
  frequency to look at.
The percept is the published one: the same band width, phase inversion and overall level, with an
uncorrelated background 10 dB or more below the noise. What a spectral analysis can still do: the
cross-spectrum of the two channels (or the spectrum of L - R) of the target burst shows the inverted
band as a narrow peak that the other bursts lack, so an analysis per frequency band finds the answer;
only listening with headphones or such an analysis does.
"""

import random

import numpy as np

from ratings.screening import SAMPLE_RATE, raised_cosine_envelope, silence

TRIAL_COUNT = 6
PASS_MARK = 5
NOISE_SECONDS = 1.0
GAP_SECONDS = 0.5
RAMP_SECONDS = 0.02
CENTRE_HZ_RANGE = (400.0, 800.0)
BANDWIDTH_FRACTION = 0.06  # the inverted band is centre * (1 +- 0.06)
# Background level relative to the main noise, drawn per burst: at least 10 dB below it.
BACKGROUND_DB_MIN, BACKGROUND_DB_MAX = -14.0, -10.0
# -20 dBFS RMS per ear: white noise peaks about 4x its RMS, far from clipping.
NOISE_RMS = 0.1
CALIBRATION_SECONDS = 3.0
QUESTION = "Which noise contains a faint tone?"


def trials_draw(rng: random.Random) -> list[dict]:
    """Per trial: the position (0..2) of the Huggins burst and a seed for the trial's sounds."""
    return [{"target": rng.randrange(3), "seed": rng.randrange(2**31)} for _ in range(TRIAL_COUNT)]


def trial_answer(trial: dict) -> int:
    return trial["target"]


def inverted_band(frequencies: np.ndarray, centre_hz: float) -> np.ndarray:
    """Which FFT bins lie in the band whose interaural phase is inverted."""
    return np.abs(frequencies - centre_hz) <= centre_hz * BANDWIDTH_FRACTION


def centre_frequency(rng: np.random.Generator) -> float:
    low, high = CENTRE_HZ_RANGE
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def _background_gain(main_left, main_right, noise_left, noise_right, correlation: float) -> float:
    """The background gain g at which corr(main_left + g noise_left, main_right + g noise_right) = correlation.

    The correlation falls from its value at g = 0 as g grows; it is a ratio of quadratics in g, so the
    sums of products are taken once and g is found by bisection.
    """

    def dot(first, second) -> float:  # (not `@`: a BLAS call per product costs more than it saves here)
        return float((first * second).sum())

    cross = (dot(main_left, main_right), dot(main_left, noise_right) + dot(noise_left, main_right))
    both_noises = dot(noise_left, noise_right)
    left = (dot(main_left, main_left), dot(main_left, noise_left), dot(noise_left, noise_left))
    right = (dot(main_right, main_right), dot(main_right, noise_right), dot(noise_right, noise_right))

    def corr(g: float) -> float:
        numerator = cross[0] + g * cross[1] + g * g * both_noises
        power_left = left[0] + 2 * g * left[1] + g * g * left[2]
        power_right = right[0] + 2 * g * right[1] + g * g * right[2]
        return numerator / (power_left * power_right) ** 0.5

    low, high = 0.0, 1.0
    while corr(high) > correlation:  # at g = 1 the background is as loud as the main noise
        high *= 2
    for _ in range(50):
        middle = (low + high) / 2
        low, high = (middle, high) if corr(middle) > correlation else (low, middle)
    return (low + high) / 2


def noise_burst(rng: np.random.Generator, *, huggins: bool, centre_hz: float) -> np.ndarray:
    """One burst, shape (n, 2): main noise (band around `centre_hz` inverted in the right ear when
    `huggins`) plus interaurally independent background noise at a level drawn for the burst."""
    length = int(SAMPLE_RATE * NOISE_SECONDS)
    envelope = raised_cosine_envelope(length, int(SAMPLE_RATE * RAMP_SECONDS))
    spectrum = np.fft.rfft(rng.standard_normal(length))
    right_spectrum = spectrum.copy()
    if huggins:
        right_spectrum[inverted_band(np.fft.rfftfreq(length, 1 / SAMPLE_RATE), centre_hz)] *= -1
    main_left = np.fft.irfft(spectrum, length) * envelope
    main_right = np.fft.irfft(right_spectrum, length) * envelope
    scale = np.sqrt(np.mean(main_left**2))
    noise_left = rng.standard_normal(length) * envelope * scale
    noise_right = rng.standard_normal(length) * envelope * scale
    # The ears' correlation a diotic burst with this background level would have, whatever this burst is.
    background_db = rng.uniform(BACKGROUND_DB_MIN, BACKGROUND_DB_MAX)
    correlation = 1.0 / (1.0 + 10 ** (background_db / 10))
    gain = _background_gain(main_left, main_right, noise_left, noise_right, correlation)
    channels = [main_left + gain * noise_left, main_right + gain * noise_right]
    return np.column_stack([channel * NOISE_RMS / np.sqrt(np.mean(channel**2)) for channel in channels])


def trial_samples(trial: dict) -> np.ndarray:
    rng = np.random.default_rng(trial["seed"])
    centre_hz = centre_frequency(rng)
    parts = [silence(GAP_SECONDS)]
    for position in range(3):
        parts.extend([noise_burst(rng, huggins=position == trial["target"], centre_hz=centre_hz), silence(GAP_SECONDS)])
    return np.concatenate(parts)


def trial_centre_hz(trial: dict) -> float:
    """The centre frequency of a trial's inverted band (drawn first from the trial's seed)."""
    return centre_frequency(np.random.default_rng(trial["seed"]))


def calibration_samples() -> np.ndarray:
    """Noise at the test level (no inverted band), for setting the volume."""
    rng = np.random.default_rng(0)
    parts = []
    for _ in range(int(CALIBRATION_SECONDS / (NOISE_SECONDS + GAP_SECONDS))):
        parts.extend([noise_burst(rng, huggins=False, centre_hz=CENTRE_HZ_RANGE[0]), silence(GAP_SECONDS)])
    return np.concatenate(parts)
