/**
 * img-resize: decode one image (PNG, JPEG, BMP, GIF, TIFF) and resize it to several square icon
 * sizes with jimp (pure JavaScript: no native binaries), re-encoding each as PNG.
 *
 * Input: the image as base64 in `image`, or as the raw body of a web action (`__ow_body`,
 * base64 for binary content), or in `data`; optional `sizes` (pixels, default 16 32 48 64 128)
 * and `return_images` (include each icon as base64; default false keeps responses small).
 * Output: the source dimensions and, per size, width, height and encoded bytes.
 */
"use strict";

const { Jimp } = require("jimp");

const DEFAULT_SIZES = [16, 32, 48, 64, 128];
const MAX_SIZE = 4096;

function imageBytes(params) {
  const encoded = params.image || params.__ow_body || params.data;
  if (!encoded || typeof encoded !== "string") {
    return null;
  }
  return Buffer.from(encoded, "base64");
}

async function main(params) {
  params = params || {};
  const bytes = imageBytes(params);
  if (!bytes || bytes.length === 0) {
    return { error: "no image: pass it base64-encoded in the 'image' parameter (or as a web action body)" };
  }
  const sizes = Array.isArray(params.sizes) && params.sizes.length ? params.sizes.map(Number) : DEFAULT_SIZES;
  // An icon is at most MAX_SIZE pixels square: larger ones exhaust the sandbox's memory.
  const bad = sizes.find((size) => !Number.isInteger(size) || size < 1 || size > MAX_SIZE);
  if (bad !== undefined) {
    return { error: "sizes: each size must be a whole number of pixels from 1 to " + MAX_SIZE + " (got " + JSON.stringify(bad) + ")" };
  }
  let source;
  try {
    source = await Jimp.read(bytes);
  } catch (err) {
    return { error: "cannot decode the image: " + err.message };
  }
  const icons = [];
  for (const size of sizes) {
    const icon = source.clone();
    icon.resize({ w: size, h: size });
    const png = await icon.getBuffer("image/png");
    const entry = { size: size, width: icon.bitmap.width, height: icon.bitmap.height, bytes: png.length };
    if (params.return_images) {
      entry.png_base64 = png.toString("base64");
    }
    icons.push(entry);
  }
  return {
    source: { width: source.bitmap.width, height: source.bitmap.height, bytes: bytes.length },
    icons: icons,
  };
}

exports.main = main;
