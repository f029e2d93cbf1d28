"""markdown: convert a Markdown document to HTML with a small converter written for faasprof.

Supported: ATX (``#``) and setext (``===``/``---``) headings, paragraphs, hard line breaks (two
trailing spaces), emphasis and strong emphasis (``*``/``_``), code spans, fenced and indented
code blocks, block quotes, nested ordered and unordered lists, horizontal rules, links, images,
automatic links (``<https://...>``). Raw HTML is escaped, not passed through.

Input: ``markdown`` (base64 of the document, as FaaSProfiler's param file gives it) or ``text``
(the document itself). Output: the HTML, its size and counts of the elements produced.
"""

import base64
import html
import re

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)\s*$")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
RULE = re.compile(r"^ {0,3}((\*[ \t]*){3,}|(-[ \t]*){3,}|(_[ \t]*){3,})$")
BULLET = re.compile(r"^( {0,3})([*+-])[ \t]+(.*)$")
ORDERED = re.compile(r"^( {0,3})(\d{1,9})[.)][ \t]+(.*)$")
QUOTE = re.compile(r"^ {0,3}> ?(.*)$")

CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
# Every pattern below stops at the characters that would open another instance of itself (a
# bracket, a parenthesis, a "<") and bounds what it spans, so a document full of unclosed
# brackets or stray asterisks takes linear, not quadratic, time. A destination may hold one level
# of balanced parentheses (https://en.wikipedia.org/wiki/Go_(game)); a title is "..." or '...'.
MAX_SPAN = 1000  # characters of emphasised text; longer runs stay literal
_DEST = r"((?:[^()\s\[\]<>]|\([^()\s]*\))+)"
_TITLE = r"(?:\s+(?:\"([^\"\n]*)\"|'([^'\n]*)'))?"
AUTOLINK = re.compile(r"<(https?://[^<>\s]+)>")
IMAGE = re.compile(r"!\[([^\[\]]*)\]\(" + _DEST + _TITLE + r"\)")
LINK = re.compile(r"\[([^\[\]]+)\]\(" + _DEST + _TITLE + r"\)")
STRONG = re.compile(r"(\*\*|__)(?=\S)(.{1,%d}?)(?<=\S)\1" % MAX_SPAN, re.S)
EMPHASIS = re.compile(r"(?<![\w*])(\*|_)(?=\S)(.{1,%d}?)(?<=\S)\1(?![\w*])" % MAX_SPAN, re.S)
MAX_NESTING = 50  # block quotes and lists nested deeper are kept as text (no unbounded recursion)
HARD_BREAK = re.compile(r" {2,}\n")


PLACEHOLDER = re.compile("\x00(\\d+)\x00")


def inline(text, saved=None):
    """Inline markup to HTML. Code spans and links are cut out first so their text stays literal.

    Cut-out fragments are kept in ``saved`` and stand in the text as ``NUL index NUL``; a link's
    text is converted with the same list (it may hold an image, as in a badge ``[![b](u)](v)``),
    so its fragments are put back with the rest, at any depth of nesting.
    """
    top = saved is None
    if top:
        saved = []

    def keep(fragment):
        saved.append(fragment)
        return "\x00%d\x00" % (len(saved) - 1)

    text = CODE_SPAN.sub(lambda m: keep("<code>%s</code>" % html.escape(m.group(2).strip(), quote=False)), text)
    text = AUTOLINK.sub(
        lambda m: keep('<a href="%s">%s</a>' % (html.escape(m.group(1)), html.escape(m.group(1)))), text
    )

    def image(m):
        title = m.group(3) or m.group(4)
        title = ' title="%s"' % html.escape(title) if title else ""
        return keep('<img src="%s" alt="%s"%s />' % (html.escape(m.group(2)), html.escape(m.group(1)), title))

    text = IMAGE.sub(image, text)

    def link(m):
        title = m.group(3) or m.group(4)
        title = ' title="%s"' % html.escape(title) if title else ""
        return keep('<a href="%s"%s>%s</a>' % (html.escape(m.group(2)), title, inline(m.group(1), saved)))

    text = LINK.sub(link, text)
    text = html.escape(text, quote=False)
    text = STRONG.sub(r"<strong>\2</strong>", text)
    text = EMPHASIS.sub(r"<em>\2</em>", text)
    text = HARD_BREAK.sub("<br />\n", text)
    if not top:
        return text
    # A fragment refers only to fragments kept before it, so this ends after as many rounds as the
    # deepest nesting.
    while PLACEHOLDER.search(text):
        text = PLACEHOLDER.sub(lambda m: saved[int(m.group(1))], text)
    return text


def list_item_match(line):
    m = BULLET.match(line)
    if m:
        return "ul", len(m.group(1)), m.group(3), m.start(3)
    m = ORDERED.match(line)
    if m:
        return "ol", len(m.group(1)), m.group(3), m.start(3)
    return None


def fenced_code(lines, i, fence):
    """The fenced code block opening at line ``i``: its HTML and the line after its closing fence."""
    marker, language = fence.group(1), fence.group(2)
    body = []
    i += 1
    while i < len(lines) and not lines[i].strip().startswith(marker):
        body.append(lines[i])
        i += 1
    attr = ' class="language-%s"' % html.escape(language) if language else ""
    # i + 1: past the closing fence (or the end of the document)
    return "<pre><code%s>%s</code></pre>" % (attr, html.escape("\n".join(body) + "\n", quote=False)), i + 1


def indented_code(lines, i):
    """The indented code block starting at line ``i``: its HTML and the line after it."""
    body = []
    while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
        body.append(lines[i][4:])
        i += 1
    while body and not body[-1].strip():
        body.pop()
    return "<pre><code>%s</code></pre>" % html.escape("\n".join(body) + "\n", quote=False), i


def blockquote(lines, i, depth):
    """The block quote starting at line ``i`` (its lines rendered as blocks): its HTML and the line after it."""
    quoted = []
    while i < len(lines) and lines[i].strip() and QUOTE.match(lines[i]):
        quoted.append(QUOTE.match(lines[i]).group(1))
        i += 1
    return "<blockquote>\n%s\n</blockquote>" % blocks(quoted, depth + 1), i


def blocks(lines, depth=0):
    """Block structure to HTML, line by line; nested containers recurse on their own lines."""
    out = []
    i = 0
    paragraph = []

    def flush():
        if paragraph:
            out.append("<p>%s</p>" % inline("\n".join(paragraph).strip()))
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            flush()
            code, i = fenced_code(lines, i, fence)
            out.append(code)
            continue
        if line.startswith("    ") and not paragraph:
            code, i = indented_code(lines, i)
            out.append(code)
            continue
        heading = ATX.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            out.append("<h%d>%s</h%d>" % (level, inline((heading.group(2) or "").strip()), level))
            i += 1
            continue
        if paragraph and SETEXT.match(line):
            level = 1 if line.strip().startswith("=") else 2
            text = "\n".join(paragraph).strip()
            paragraph.clear()
            out.append("<h%d>%s</h%d>" % (level, inline(text), level))
            i += 1
            continue
        if RULE.match(line):
            flush()
            out.append("<hr />")
            i += 1
            continue
        if QUOTE.match(line) and depth < MAX_NESTING:
            flush()
            quoted, i = blockquote(lines, i, depth)
            out.append(quoted)
            continue
        item = list_item_match(line) if depth < MAX_NESTING else None
        if item:
            flush()
            html_list, i = parse_list(lines, i, item[0], depth)
            out.append(html_list)
            continue
        paragraph.append(line)
        i += 1
    flush()
    return "\n".join(out)


def parse_list(lines, i, kind, depth=0):
    """One list starting at line i; returns (html, next line). Items are tight unless a blank
    line separates them, as in most Markdown dialects."""
    items = []
    loose = False
    start_number = None
    while i < len(lines):
        item = list_item_match(lines[i])
        if not item or item[0] != kind:
            break
        if kind == "ol" and start_number is None:
            start_number = int(ORDERED.match(lines[i]).group(2))
        content_column = item[3]
        body = [item[2]]
        i += 1
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                # A blank line continues the item only if indented content follows.
                if i + 1 < len(lines) and lines[i + 1].startswith(" " * content_column) and lines[i + 1].strip():
                    body.append("")
                    loose = True
                    i += 1
                    continue
                if i + 1 < len(lines) and list_item_match(lines[i + 1]) and list_item_match(lines[i + 1])[0] == kind:
                    loose = True
                break
            if line.startswith(" " * content_column):
                body.append(line[content_column:])
            elif list_item_match(line) is None and body[-1].strip():
                body.append(line.strip())  # a lazy continuation line of the item's paragraph
            else:
                break
            i += 1
        items.append(body)
        if i < len(lines) and not lines[i].strip():
            i += 1
    rendered = []
    for body in items:
        inner = blocks(body, depth + 1)
        if not loose and inner.startswith("<p>"):
            # Tight list: the item's first paragraph is not wrapped in <p>.
            end = inner.find("</p>")
            inner = inner[3:end] + inner[end + 4 :]
        rendered.append("<li>%s</li>" % inner)
    start = ' start="%d"' % start_number if kind == "ol" and start_number not in (None, 1) else ""
    return "<%s%s>\n%s\n</%s>" % (kind, start, "\n".join(rendered), kind), i


def convert(text):
    # NUL marks cut-out fragments inside inline(); in a document it becomes U+FFFD, as CommonMark says.
    text = text.replace("\x00", "\ufffd")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ").split("\n")
    return blocks(lines) + "\n"


def main(args):
    if "markdown" in args:
        try:
            if not isinstance(args["markdown"], str):
                raise ValueError("not a string")
            text = base64.b64decode(args["markdown"], validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return {"error": "markdown: not base64 of UTF-8 text; pass the document itself in 'text' instead"}
    elif "text" in args and args["text"] is not None:
        text = str(args["text"])
    else:
        return {"error": "no document: pass 'text' (Markdown) or 'markdown' (base64 of it)"}
    out = convert(text)
    return {
        "html": out,
        "html_bytes": len(out.encode("utf-8")),
        "markdown_bytes": len(text.encode("utf-8")),
        "elements": {
            tag: len(re.findall("<%s[ >]" % tag, out))
            for tag in (
                "h1",
                "h2",
                "h3",
                "p",
                "ul",
                "ol",
                "li",
                "pre",
                "blockquote",
                "a",
                "img",
                "em",
                "strong",
                "code",
            )
        },
    }
