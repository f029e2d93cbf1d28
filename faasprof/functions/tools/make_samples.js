/**
 * Regenerates the sample images shipped with img-resize and ocr-img (they are drawn, not
 * downloaded). img-resize's npm packages (jimp) live in faasprof's cache, not beside the code:
 *   NODE_PATH="$(python -c 'from faasprof.functions.catalogue import lookup; print(lookup("img-resize").node_modules)')" \
 *     node faasprof/functions/tools/make_samples.js
 * (`python -m faasprof.functions.package img-resize` installs them first). The outputs are
 * committed; this script records how they were made.
 */
"use strict";

const path = require("path");
const { Jimp, loadFont } = require("jimp");
const { SANS_32_BLACK } = require(path.join(path.dirname(require.resolve("jimp/package.json")), "dist", "commonjs", "fonts.js"));

async function iconSource(file) {
  // 512 x 384: a colour gradient with a dark disc and a white bar, so resizing has edges to keep.
  const width = 512, height = 384;
  const image = new Jimp({ width, height, color: 0xffffffff });
  image.scan(0, 0, width, height, function (x, y, idx) {
    const data = this.bitmap.data;
    data[idx] = Math.round((x / width) * 255);
    data[idx + 1] = Math.round((y / height) * 255);
    data[idx + 2] = 160;
    data[idx + 3] = 255;
    const dx = x - width / 2, dy = y - height / 2;
    if (dx * dx + dy * dy < 120 * 120) {
      data[idx] = 30; data[idx + 1] = 30; data[idx + 2] = 60;
    }
    if (y > 300 && y < 330 && x > 64 && x < 448) {
      data[idx] = data[idx + 1] = data[idx + 2] = 255;
    }
  });
  await image.write(file);
}

async function ocrSource(file) {
  const font = await loadFont(SANS_32_BLACK);
  const image = new Jimp({ width: 900, height: 220, color: 0xffffffff });
  image.print({ font, x: 30, y: 30, text: "Serverless functions start cold" });
  image.print({ font, x: 30, y: 90, text: "then stay warm between requests" });
  image.print({ font, x: 30, y: 150, text: "Profiling 2024 benchmark" });
  await image.write(file);
}

(async () => {
  await iconSource(path.join(__dirname, "..", "img-resize", "sample.png"));
  await ocrSource(path.join(__dirname, "..", "ocr-img", "sample.png"));
})();
