/*
 * dash_assets.c — the dashboard's page files (server/pages/, plus the
 * viewer's shared util.js, style.css and icon), built into the binary with
 * .incbin like the viewer's, and the fixed table that is all the dashboard
 * route serves: no file system access, no data (the page asks the read
 * API, which checks the session).
 */
#include <string.h>

#include "server/read.h"
#include "web/view.h"

VIEW_ASSET(hg_dash_index_html, "server/pages/index.html")
VIEW_ASSET(hg_dash_js, "server/pages/dash.js")
VIEW_ASSET(hg_dash_css, "server/pages/dash.css")

int srv_dash_route(void *app, struct web_req *r, int phase, const char *data, size_t size) {
  (void)app, (void)data, (void)size;
  if (phase != WEB_BEGIN) return WEB_REPLIED;
  static const struct {
    const char *path, *type;
    const unsigned char *data, *end;
  } table[] = {
      {"/", "text/html; charset=utf-8", hg_dash_index_html, hg_dash_index_html_end},
      {"/index.html", "text/html; charset=utf-8", hg_dash_index_html, hg_dash_index_html_end},
      {"/dash.js", "text/javascript; charset=utf-8", hg_dash_js, hg_dash_js_end},
      {"/dash.css", "text/css; charset=utf-8", hg_dash_css, hg_dash_css_end},
  };
  const char *p = web_path(r);
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(p, table[i].path)) return web_reply_static(r, 200, table[i].type, table[i].data, (size_t)(table[i].end - table[i].data));
  /* the viewer's shared files */
  if (!strcmp(p, "/util.js") || !strcmp(p, "/style.css") || !strcmp(p, "/icon.svg")) {
    const struct view_asset *a = view_asset_find(p);
    return web_reply_static(r, 200, a->type, a->data, a->size);
  }
  return web_reply_text(r, 404, "not found\n");
}
