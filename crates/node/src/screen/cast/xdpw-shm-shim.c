/* LD_PRELOAD shim for xdg-desktop-portal-wlr 0.7.x on a compositor without dma-buf (sway with
 * WLR_RENDERER=pixman, no /dev/dri). xdpw 0.7's Start refuses to cast unless screencopy announced
 * a linux_dmabuf format ("wlroots: unable to receive a valid format from wlr_screencopy"): it
 * compares the *portal* interface version (4), not the screencopy version, with 3. This shim wraps
 * the zwlr_screencopy_frame_v1 listener and, when the compositor sends no linux_dmabuf event
 * before buffer_done, delivers one that repeats the shm buffer's format and size. With no
 * zwp_linux_dmabuf_v1 global xdpw has no dma-buf modifiers, so it still offers PipeWire only shm
 * (MemFd) buffers: the fake format is never used to allocate anything. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

struct wl_proxy;
const char *wl_proxy_get_class(struct wl_proxy *proxy);

struct frame_listener { /* zwlr_screencopy_frame_v1_listener, version 3 */
	void (*buffer)(void *, void *, uint32_t, uint32_t, uint32_t, uint32_t);
	void (*flags)(void *, void *, uint32_t);
	void (*ready)(void *, void *, uint32_t, uint32_t, uint32_t);
	void (*failed)(void *, void *);
	void (*damage)(void *, void *, uint32_t, uint32_t, uint32_t, uint32_t);
	void (*linux_dmabuf)(void *, void *, uint32_t, uint32_t, uint32_t);
	void (*buffer_done)(void *, void *);
};

static const struct frame_listener *orig;
static uint32_t shm_format, shm_w, shm_h;
static int saw_dmabuf;

static void on_buffer(void *d, void *f, uint32_t fmt, uint32_t w, uint32_t h, uint32_t stride) {
	shm_format = fmt; shm_w = w; shm_h = h; saw_dmabuf = 0;
	orig->buffer(d, f, fmt, w, h, stride);
}
static void on_linux_dmabuf(void *d, void *f, uint32_t fmt, uint32_t w, uint32_t h) {
	saw_dmabuf = 1;
	orig->linux_dmabuf(d, f, fmt, w, h);
}
static void on_buffer_done(void *d, void *f) {
	if (!saw_dmabuf) {
		/* wl_shm ARGB8888 = 0, XRGB8888 = 1; every other wl_shm code is the DRM fourcc */
		uint32_t drm = shm_format == 0 ? 0x34325241 : shm_format == 1 ? 0x34325258 : shm_format;
		orig->linux_dmabuf(d, f, drm, shm_w, shm_h);
	}
	orig->buffer_done(d, f);
}
static struct frame_listener wrapped;

int wl_proxy_add_listener(struct wl_proxy *proxy, void (**implementation)(void), void *data) {
	static int (*real)(struct wl_proxy *, void (**)(void), void *);
	if (!real)
		real = (int (*)(struct wl_proxy *, void (**)(void), void *))dlsym(RTLD_NEXT, "wl_proxy_add_listener");
	if (strcmp(wl_proxy_get_class(proxy), "zwlr_screencopy_frame_v1") == 0) {
		orig = (const struct frame_listener *)implementation;
		wrapped = *orig;
		wrapped.buffer = on_buffer;
		wrapped.linux_dmabuf = on_linux_dmabuf;
		wrapped.buffer_done = on_buffer_done;
		implementation = (void (**)(void))&wrapped;
	}
	return real(proxy, implementation, data);
}
