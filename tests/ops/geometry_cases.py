"""RandomCrop parameter sets shared by test_geometry.py (the functions) and test_geometry_spec.py (the op through
the executor): every padding_mode, padding of 1, 2 and 4 numbers, pad_if_needed alone and after padding, fills.
Every photo of the fixture (the smallest is 333x234) fits each of them after its padding."""

RANDOM_CROPS = [
    dict(size=[224, 224]),
    dict(size=[176, 200], padding=[4], padding_mode="reflect"),
    dict(size=[240, 320], padding=[2, 7], fill=[9, 99, 199]),
    dict(size=[900, 700], pad_if_needed=True, padding_mode="symmetric"),
    dict(size=[600, 64], padding=[1, 2, 3, 4], pad_if_needed=True, padding_mode="reflect"),
    dict(size=[520, 510], padding=[3], pad_if_needed=True, padding_mode="edge"),
    dict(size=[700, 700], pad_if_needed=True, fill=[255]),
]


def case_id(spec):
    return ",".join(f"{k}={v}" for k, v in spec.items())
