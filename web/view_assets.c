/*
 * view_assets.c — the viewer's page files (viewer/), built into the binary
 * with the assembler's .incbin (no generator, no files to install), and the
 * fixed table that is the only thing the server serves besides /api/.
 */
#include <string.h>

#include "web/view.h"

VIEW_ASSET(hg_view_index_html, "viewer/index.html")
VIEW_ASSET(hg_view_app_js, "viewer/app.js")
VIEW_ASSET(hg_view_util_js, "viewer/util.js")
VIEW_ASSET(hg_view_style_css, "viewer/style.css")
VIEW_ASSET(hg_view_icon_svg, "viewer/icon.svg")

const struct view_asset *view_asset_find(const char *path) {
  static struct view_asset table[] = {
      {"/", "text/html; charset=utf-8", hg_view_index_html, 0},
      {"/index.html", "text/html; charset=utf-8", hg_view_index_html, 0},
      {"/app.js", "text/javascript; charset=utf-8", hg_view_app_js, 0},
      {"/util.js", "text/javascript; charset=utf-8", hg_view_util_js, 0},
      {"/style.css", "text/css; charset=utf-8", hg_view_style_css, 0},
      {"/icon.svg", "image/svg+xml", hg_view_icon_svg, 0},
  };
  const unsigned char *end[] = {hg_view_index_html_end, hg_view_index_html_end, hg_view_app_js_end, hg_view_util_js_end,
                                hg_view_style_css_end, hg_view_icon_svg_end};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    table[i].size = (size_t)(end[i] - table[i].data);
    if (path && !strcmp(path, table[i].path)) return &table[i];
  }
  return NULL;
}
