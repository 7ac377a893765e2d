#!/usr/bin/env python3
"""Makes the seed corpus of fuzz_decode (tests/fuzz/corpus_decode/) from real photographs.

Usage: tests/fuzz/make_decode_corpus.py OUT_DIR
Needs Debian's python3-pil and python3-skimage (for ../shared/data/make_imagefolder.py, beside the checkout) and
cjpeg (libjpeg-turbo-progs). The photographs are make_imagefolder.py's (20 images, seed 1), shrunk to small odd
sizes and encoded in the JPEG and PNG variants the decoder handles; each file is an 8-byte parameter block (see
fuzz_decode.cc) followed by the image. 16-bit RGB and Adam7-interlaced PNGs are written here (Pillow writes
neither). Same tools, same files.
"""
import glob, io, os, struct, subprocess, sys, tempfile, zlib
from PIL import Image

out = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
maker = os.path.join(here, '..', '..', '..', 'shared', 'data', 'make_imagefolder.py')
tmp = tempfile.mkdtemp(prefix='batchd-corpus-')
subprocess.run([sys.executable, maker, tmp + '/photos', '20', '1'], check=True, stdout=subprocess.DEVNULL)
photos = sorted(glob.glob(tmp + '/photos/*/*.jpg'))
colour = [Image.open(p).convert('RGB') for p in photos if Image.open(p).mode == 'RGB']


def params(flags, crop, resize, box):
    """flags: bit 0 val (else train), bit 1 exact decode, bit 2 raw window past the image; crop = 8 + byte;
    resize = crop + 4 * byte; box: the crop box as fractions (0..255): left, top, then width and height of what
    remains right and below (fuzz_decode.cc). The raw check's
    DCT scale (byte 3) goes round TurboJPEG's 16 factors, one seed to the next."""
    return bytes([flags, crop, resize, len(written) % 16, box[0], box[1], box[2], box[3]])


os.makedirs(out, exist_ok=True)
written = []


def put(name, data, p):
    path = os.path.join(out, name)
    with open(path, 'wb') as f:
        f.write(p + data)
    written.append((name, len(p) + len(data)))


def pil(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def cjpeg(im, *opts):
    src = os.path.join(tmp, 'src.ppm')
    im.save(src)
    return subprocess.run(['cjpeg', *opts, src], check=True, stdout=subprocess.PIPE).stdout


def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))


def png_rgb(im, bits, interlace=False):
    """An RGB PNG of 8 or 16 bits a sample (16: v * 257, big-endian), optionally Adam7-interlaced, filter 0."""
    w, h = im.size
    px = im.load()
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    raw = bytearray()
    for x0, y0, dx, dy in passes if interlace else [(0, 0, 1, 1)]:
        for y in range(y0, h, dy):
            xs = range(x0, w, dx)
            if len(xs) == 0:
                break
            raw.append(0)
            for x in xs:
                for v in px[x, y]:
                    raw += struct.pack('>H', v * 257) if bits == 16 else bytes([v])
    ihdr = struct.pack('>IIBBBBB', w, h, bits, 2, 0, 0, 1 if interlace else 0)
    return b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + chunk(b'IDAT', zlib.compress(bytes(raw), 9)) + \
        chunk(b'IEND', b'')


a = colour[0].resize((61, 47), Image.BILINEAR)
b = colour[1].resize((48, 64), Image.BILINEAR)
c = colour[2].resize((97, 33), Image.BILINEAR)
tiny = colour[3].resize((7, 3), Image.BILINEAR)
train, val, exact, outside = 0, 1, 2, 4
# JPEG: what the decoder's paths tell apart (TurboJPEG whole decode, libjpeg region decode, CMYK, DCT scales).
put('jpeg_baseline_420', pil(a, 'JPEG', quality=85), params(train, 8, 0, (40, 30, 200, 220)))
put('jpeg_baseline_420_val', pil(b, 'JPEG', quality=75), params(val, 16, 4, (0, 0, 255, 255)))
put('jpeg_progressive', pil(a, 'JPEG', quality=90, progressive=True), params(train, 24, 0, (128, 0, 255, 128)))
put('jpeg_gray', pil(b.convert('L'), 'JPEG', quality=85), params(train | outside, 8, 0, (0, 100, 90, 255)))
put('jpeg_cmyk', pil(a.convert('CMYK'), 'JPEG', quality=90), params(train, 16, 0, (20, 20, 230, 230)))
put('jpeg_444', pil(c, 'JPEG', quality=90, subsampling=0), params(train, 8, 0, (200, 10, 255, 250)))
put('jpeg_422', pil(c, 'JPEG', quality=90, subsampling=1), params(val | exact, 8, 2, (0, 0, 255, 255)))
put('jpeg_440', cjpeg(a, '-sample', '1x2'), params(train, 8, 0, (64, 64, 191, 191)))
put('jpeg_411', cjpeg(c, '-sample', '4x1'), params(train, 12, 0, (10, 200, 250, 255)))
put('jpeg_restart_rows', cjpeg(a, '-restart', '1'), params(train, 8, 0, (0, 128, 255, 255)))
put('jpeg_restart_blocks_progressive', cjpeg(b, '-restart', '3B', '-progressive'),
    params(train | outside, 8, 0, (100, 100, 160, 160)))
put('jpeg_arithmetic', cjpeg(a, '-arithmetic'), params(train, 8, 0, (0, 0, 128, 255)))
put('jpeg_optimized_odd', cjpeg(c, '-optimize', '-quality', '60'), params(val, 40, 10, (0, 0, 255, 255)))
put('jpeg_tiny', pil(tiny, 'JPEG', quality=95), params(train, 8, 0, (0, 0, 255, 255)))
put('jpeg_trailing_zeros', pil(b, 'JPEG', quality=75) + b'\0' * 16, params(train, 8, 0, (30, 30, 60, 60)))
# PNG: every colour type and bit depth libspng expands to RGB8, and Adam7.
put('png_rgb', pil(a, 'PNG'), params(train, 8, 0, (10, 10, 240, 240)))
put('png_rgba', pil(Image.merge('RGBA', (*a.split(), a.convert('L'))), 'PNG'), params(val, 8, 3, (0, 0, 255, 255)))
put('png_gray', pil(b.convert('L'), 'PNG'), params(train | exact, 8, 0, (0, 0, 255, 100)))
put('png_gray_alpha', pil(Image.merge('LA', (b.convert('L'), b.convert('L'))), 'PNG'),
    params(train, 8, 0, (50, 0, 255, 255)))
put('png_gray_1bit', pil(c.convert('1'), 'PNG'), params(train, 8, 0, (0, 0, 255, 255)))
put('png_palette', pil(a.convert('P', palette=Image.ADAPTIVE, colors=16), 'PNG', bits=4),
    params(train, 8, 0, (0, 60, 200, 255)))
put('png_palette_trns', pil(b.convert('P', palette=Image.ADAPTIVE, colors=200), 'PNG', transparency=3),
    params(val | exact, 8, 0, (0, 0, 255, 255)))
put('png_gray_16bit', pil(b.convert('L').convert('I').point(lambda v: v * 257).convert('I;16'), 'PNG'),
    params(train, 8, 0, (0, 0, 255, 255)))
put('png_rgb_16bit', png_rgb(tiny.resize((13, 11)), 16), params(train, 8, 0, (0, 0, 255, 255)))
put('png_rgb_16bit_interlaced', png_rgb(c.resize((23, 17)), 16, interlace=True),
    params(train, 8, 0, (10, 10, 99, 250)))
put('png_rgb_interlaced', png_rgb(a, 8, interlace=True), params(val, 8, 0, (0, 0, 255, 255)))
for name, size in written:
    assert size < 20000, (name, size)
    print(f'{name}: {size} bytes')
subprocess.run(['rm', '-rf', tmp], check=True)
