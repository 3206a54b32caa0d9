// A self-contained SVG flame graph, written from the collapsed stacks: frame-wise sorted
// stacks put every frame's samples in one contiguous run, so frames are laid out in one pass
// (a frame opens where a stack first differs from the previous one and closes where a later
// stack stops sharing it), without building a tree.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "array_grow.h"
#include "export.h"
#include "export_check.h"
#include "stack_collapse.h"
#include "string_builder.h"
#include "string_table.h"

// Layout in pixels (x in hundredths of a pixel, to print without the locale-dependent %f).
enum {
  kWidth = 1200,
  kPad = 10,
  kFrameHeight = 16,
  kFontSize = 12,
  kTop = 48,        // title and buttons
  kBottom = 32,     // hover details and search result
  kCharWidth = 708  // hundredths of a pixel: about 0.59 em of the font
};

typedef struct frame {
  const char* name;  // into a collapsed line, not NUL-terminated
  size_t len;
  uint32_t depth;  // 0 = the "all" root
  uint64_t start;  // in samples
  uint64_t count;
} frame_t;

typedef struct frame_list {
  frame_t* items;
  size_t count;
  size_t cap;
} frame_list_t;

static bool push_frame(frame_list_t* list, frame_t f) {
  if (!zxs_array_grow((void**)&list->items, &list->cap, list->count + 1, sizeof(list->items[0]))) {
    return false;
  }
  list->items[list->count++] = f;
  return true;
}

// Length of the valid UTF-8 sequence at s (1..4), 0 if the bytes there are not one (or encode
// a character XML does not allow).
static size_t utf8_length(const unsigned char* s) {
  unsigned c = s[0];
  if (c < 0x80) {
    return (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') ? 1 : 0;
  }
  size_t n;
  uint32_t cp;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) {
      return 0;  // also stops at the NUL terminator
    }
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
      cp == 0xffff) {
    return 0;
  }
  return n;
}

// Writes up to `len` bytes of s (stopping at a NUL), XML-escaped; what XML cannot carry
// becomes U+FFFD.
static void write_xml(FILE* out, const char* s, size_t len) {
  const unsigned char* p = (const unsigned char*)s;
  const unsigned char* end = p + len;
  while (p < end && *p != '\0') {
    switch (*p) {
      case '&':
        fputs("&amp;", out);
        p++;
        continue;
      case '<':
        fputs("&lt;", out);
        p++;
        continue;
      case '>':
        fputs("&gt;", out);
        p++;
        continue;
      case '"':
        fputs("&quot;", out);
        p++;
        continue;
      case '\'':
        fputs("&apos;", out);
        p++;
        continue;
      default:
        break;
    }
    size_t n = utf8_length(p);
    if (n == 0 || n > (size_t)(end - p)) {
      fputs("\xef\xbf\xbd", out);
      p++;
    } else {
      fwrite(p, 1, n, out);
      p += n;
    }
  }
}

// The byte length of the first `chars` characters of s[0..len) (invalid bytes count as one).
static size_t prefix_bytes(const char* s, size_t len, size_t chars) {
  size_t at = 0;
  for (size_t c = 0; c < chars && at < len; c++) {
    size_t n = utf8_length((const unsigned char*)s + at);
    at += (n == 0 || n > len - at) ? 1 : n;
  }
  return at;
}

static size_t char_count(const char* s, size_t len) {
  size_t count = 0;
  for (size_t at = 0; at < len; count++) {
    size_t n = utf8_length((const unsigned char*)s + at);
    at += (n == 0 || n > len - at) ? 1 : n;
  }
  return count;
}

static void write_hundredths(FILE* out, uint64_t v) {
  fprintf(out, "%" PRIu64 ".%02" PRIu64, v / 100, v % 100);
}

// The x of sample offset `at`, in hundredths of a pixel: frames sharing an edge share it
// exactly.
static uint64_t x_of(uint64_t at, uint64_t total) {
  return kPad * 100 +
         (uint64_t)((double)at * (double)((kWidth - 2 * kPad) * 100) / (double)total + 0.5);
}

static void write_frame(FILE* out, const frame_t* f, uint64_t total, uint32_t height) {
  uint64_t x = x_of(f->start, total);
  uint64_t w = x_of(f->start + f->count, total) - x;
  uint32_t y = height - kBottom - (f->depth + 1) * kFrameHeight;
  // The "hot" palette of flamegraph.pl, from a hash of the name rather than at random.
  uint32_t h = zxs_hash_string(f->name, f->len);
  unsigned r = 205 + h % 51;
  unsigned g = (h >> 8) % 231;
  unsigned b = (h >> 16) % 56;

  fputs("<g class=\"f\"><title>", out);
  write_xml(out, f->name, f->len);
  zxs_sb_t pct = {0};
  zxs_sb_percent(&pct, f->count, total);
  fprintf(out, " (%" PRIu64 " sample%s, %s%%)</title><rect x=\"", f->count,
          f->count == 1 ? "" : "s", zxs_sb_str(&pct));
  zxs_sb_free(&pct);
  write_hundredths(out, x);
  fputs("\" y=\"", out);
  fprintf(out, "%" PRIu32 "\" width=\"", y);
  write_hundredths(out, w);
  fprintf(out, "\" height=\"%d\" rx=\"2\" ry=\"2\" fill=\"rgb(%u,%u,%u)\"/>", kFrameHeight - 1, r,
          g, b);
  // Label: as many characters as fit, ".." marking a cut; none under 3 characters.
  size_t fit = w > 600 ? (size_t)((w - 600) / kCharWidth) : 0;
  size_t chars = char_count(f->name, f->len);
  fputs("<text x=\"", out);
  write_hundredths(out, x + 300);
  fprintf(out, "\" y=\"%" PRIu32 "\">", y + 12);
  if (fit >= 3) {
    if (chars <= fit) {
      write_xml(out, f->name, f->len);
    } else {
      write_xml(out, f->name, prefix_bytes(f->name, f->len, fit - 2));
      fputs("..", out);
    }
  }
  fputs("</text></g>\n", out);
}

// Click-to-zoom, hover details and search. Optional: without scripting the graph and its
// tooltips read the same. Kept to what every browser's SVG DOM has.
static const char kScript[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "(function () {\n"
    "  var W = 1200, PAD = 10, CHAR = 7.08;\n"
    "  var frames = [], zoomed = false, searching = false;\n"
    "  var details = document.getElementById('details');\n"
    "  var unzoom = document.getElementById('unzoom');\n"
    "  var search = document.getElementById('search');\n"
    "  var matched = document.getElementById('matched');\n"
    "  var gs = document.getElementById('frames').getElementsByTagName('g');\n"
    "  for (var i = 0; i < gs.length; i++) {\n"
    "    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
    "    var t = g.getElementsByTagName('title')[0].textContent;\n"
    "    frames.push({g: g, r: r, t: g.getElementsByTagName('text')[0], title: t,\n"
    "      name: t.replace(/ \\([^()]*\\)$/, ''), fill: r.getAttribute('fill'),\n"
    "      x: parseFloat(r.getAttribute('x')), w: parseFloat(r.getAttribute('width')),\n"
    "      y: parseFloat(r.getAttribute('y'))});\n"
    "    g.frame = frames[frames.length - 1];\n"
    "  }\n"
    "  function frameOf(e) {\n"
    "    for (var n = e.target; n; n = n.parentNode) if (n.frame) return n.frame;\n"
    "    return null;\n"
    "  }\n"
    "  function place(f, x, w) {\n"
    "    f.r.setAttribute('x', x.toFixed(2)); f.r.setAttribute('width', w.toFixed(2));\n"
    "    f.t.setAttribute('x', (x + 3).toFixed(2));\n"
    "    var n = Math.floor((w - 6) / CHAR);\n"
    "    f.t.textContent = n < 3 ? '' : (f.name.length <= n ? f.name :\n"
    "      f.name.substring(0, n - 2) + '..');\n"
    "  }\n"
    "  function zoom(z) {\n"
    "    var ratio = (W - 2 * PAD) / z.w, e = 0.005;\n"
    "    for (var i = 0; i < frames.length; i++) {\n"
    "      var f = frames[i], show = false;\n"
    "      if (f.y > z.y) {\n"
    "        if (f.x <= z.x + e && f.x + f.w >= z.x + z.w - e) {\n"
    "          place(f, PAD, W - 2 * PAD); f.g.style.opacity = '0.5'; show = true;\n"
    "        }\n"
    "      } else if (f.x >= z.x - e && f.x + f.w <= z.x + z.w + e) {\n"
    "        place(f, PAD + (f.x - z.x) * ratio, f.w * ratio); f.g.style.opacity = '';\n"
    "        show = true;\n"
    "      }\n"
    "      f.g.style.display = show ? '' : 'none';\n"
    "    }\n"
    "    zoomed = true; unzoom.style.display = '';\n"
    "  }\n"
    "  function reset() {\n"
    "    for (var i = 0; i < frames.length; i++) {\n"
    "      var f = frames[i];\n"
    "      place(f, f.x, f.w); f.g.style.display = ''; f.g.style.opacity = '';\n"
    "    }\n"
    "    zoomed = false; unzoom.style.display = 'none';\n"
    "  }\n"
    "  function find() {\n"
    "    var i, f;\n"
    "    for (i = 0; i < frames.length; i++) frames[i].r.setAttribute('fill', frames[i].fill);\n"
    "    matched.textContent = ' ';\n"
    "    if (searching) { searching = false; search.textContent = 'Search'; return; }\n"
    "    var text = window.prompt('Search for (regular expression):', '');\n"
    "    if (!text) return;\n"
    "    var re;\n"
    "    try { re = new RegExp(text); } catch (err) { matched.textContent = 'Bad expression';\n"
    "      return; }\n"
    "    var spans = [];\n"
    "    for (i = 0; i < frames.length; i++) {\n"
    "      f = frames[i];\n"
    "      if (re.test(f.name)) { f.r.setAttribute('fill', 'rgb(230,0,230)'); spans.push(f); }\n"
    "    }\n"
    "    spans.sort(function (a, b) { return a.x - b.x; });\n"
    "    var covered = 0, end = -1;\n"
    "    for (i = 0; i < spans.length; i++) {\n"
    "      var s = spans[i], from = Math.max(s.x, end), to = s.x + s.w;\n"
    "      if (to > from) { covered += to - from; end = to; }\n"
    "    }\n"
    "    matched.textContent = 'Matched: ' + (100 * covered / (W - 2 * PAD)).toFixed(2) + '%';\n"
    "    searching = true; search.textContent = 'Reset search';\n"
    "  }\n"
    "  var root = document.getElementById('frames');\n"
    "  root.addEventListener('click', function (e) { var f = frameOf(e); if (f) zoom(f); });\n"
    "  root.addEventListener('mouseover', function (e) {\n"
    "    var f = frameOf(e); if (f) details.textContent = f.title; });\n"
    "  root.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
    "  unzoom.addEventListener('click', reset);\n"
    "  search.addEventListener('click', find);\n"
    "  search.style.display = '';\n"
    "})();\n"
    "]]></script>\n";

// Frames from the frame-wise sorted stacks (see the file comment).
static bool layout(zxs_export_stack_t* stacks, size_t count, uint64_t total, frame_list_t* out,
                   uint32_t* max_depth) {
  if (!push_frame(out,
                  (frame_t){.name = "all", .len = 3, .depth = 0, .start = 0, .count = total})) {
    return false;
  }
  frame_t* open = NULL;  // the previous stack's frames, outermost first
  size_t open_count = 0;
  size_t open_cap = 0;
  uint64_t at = 0;
  bool ok = true;
  *max_depth = 0;
  for (size_t i = 0; i <= count && ok; i++) {
    // Split this stack (none after the last: close everything).
    size_t shared = 0;
    size_t n = 0;
    const char* line = i < count ? stacks[i].line : "";
    for (const char* p = line; i < count;) {
      const char* semi = strchr(p, ';');
      size_t len = semi != NULL ? (size_t)(semi - p) : strlen(p);
      if (n == shared && n < open_count && open[n].len == len &&
          memcmp(open[n].name, p, len) == 0) {
        shared++;
      }
      n++;
      if (semi == NULL) {
        break;
      }
      p = semi + 1;
    }
    // Close the previous stack's frames past the shared ones, innermost first.
    while (open_count > shared) {
      frame_t* f = &open[--open_count];
      f->count = at - f->start;
      ok = ok && push_frame(out, *f);
    }
    if (i == count) {
      break;
    }
    if (n > open_cap) {
      frame_t* more = realloc(open, n * sizeof(open[0]));
      if (more == NULL) {
        ok = false;
        break;
      }
      open = more;
      open_cap = n;
    }
    size_t k = 0;
    for (const char* p = line;; k++) {
      const char* semi = strchr(p, ';');
      size_t len = semi != NULL ? (size_t)(semi - p) : strlen(p);
      if (k >= shared) {
        open[k] = (frame_t){.name = p, .len = len, .depth = (uint32_t)k + 1, .start = at};
      }
      if (semi == NULL) {
        break;
      }
      p = semi + 1;
    }
    open_count = n;
    *max_depth = n > *max_depth ? (uint32_t)n : *max_depth;
    at += stacks[i].count;
  }
  free(open);
  return ok;
}

zx_status_t zxs_export_flamegraph(const zxs_profile_t* profile, uint32_t flags, const char* title,
                                  FILE* out) {
  zx_status_t status = zxs_export_check(profile, out);
  if (status != ZX_OK) {
    return status;
  }
  zxs_export_stack_t* stacks;
  size_t count;
  status = zxs_export_collapse(profile, flags, true, &stacks, &count);
  if (status != ZX_OK) {
    return status;
  }
  uint64_t total = 0;
  for (size_t i = 0; i < count; i++) {
    total += stacks[i].count;
  }
  frame_list_t frames = {0};
  uint32_t max_depth = 0;
  if (total > 0 && !layout(stacks, count, total, &frames, &max_depth)) {
    free(frames.items);
    zxs_export_stacks_free(stacks, count);
    return ZX_ERR_NO_MEMORY;
  }
  uint32_t height = kTop + kBottom + (max_depth + 1) * kFrameHeight;

  fprintf(out,
          "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
          "<svg version=\"1.1\" width=\"%d\" height=\"%" PRIu32 "\" viewBox=\"0 0 %d %" PRIu32
          "\" xmlns=\"http://www.w3.org/2000/svg\" style=\"background-color:#f4f4f0\">\n"
          "<style>text{font-family:Verdana,'DejaVu Sans',sans-serif;font-size:%dpx;fill:#000}"
          "#title{font-size:17px;text-anchor:middle}.button{cursor:pointer;fill:#0645ad}"
          ".f{cursor:pointer}.f:hover rect{stroke:#000;stroke-width:0.5}</style>\n",
          kWidth, height, kWidth, height, kFontSize);
  fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\">", kWidth / 2);
  if (title != NULL) {
    write_xml(out, title, strlen(title));
  } else {
    bool named = profile->process_name != NULL && profile->process_name[0] != '\0';
    fputs("CPU samples of ", out);
    if (named) {
      write_xml(out, profile->process_name, strlen(profile->process_name));
      fputs(" ", out);
    }
    fprintf(out, "(pid %" PRIu64 ")", profile->pid);
  }
  fputs("</text>\n", out);
  fprintf(out,
          "<text id=\"unzoom\" class=\"button\" x=\"%d\" y=\"24\" style=\"display:none\">Reset "
          "zoom</text>\n"
          "<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\" style=\"display:none\">"
          "Search</text>\n"
          "<text id=\"details\" x=\"%d\" y=\"%" PRIu32
          "\"> </text>\n"
          "<text id=\"matched\" x=\"%d\" y=\"%" PRIu32 "\"> </text>\n",
          kPad, kWidth - kPad - 100, kPad, height - 10, kWidth - kPad - 150, height - 10);
  if (total == 0) {
    fprintf(out, "<text x=\"%d\" y=\"%d\">No samples</text>\n", kPad, kTop + 12);
  }
  fputs("<g id=\"frames\">\n", out);
  for (size_t i = 0; i < frames.count; i++) {
    const frame_t* f = &frames.items[i];
    // Under 0.1 px: invisible, and so are all its children (see export.h).
    if ((double)f->count * (kWidth - 2 * kPad) * 10.0 < (double)total) {
      continue;
    }
    write_frame(out, f, total, height);
  }
  fputs("</g>\n", out);
  fputs(kScript, out);
  fputs("</svg>\n", out);
  free(frames.items);
  zxs_export_stacks_free(stacks, count);
  return zxs_export_stream_status(out);
}
