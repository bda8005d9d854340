/*
 * in_handler.h — whether the calling thread runs a signal handler
 * (capture/in_handler.c). 1 yes, 0 no or not known on this platform.
 */
#ifndef HG_CAPTURE_IN_HANDLER_H
#define HG_CAPTURE_IN_HANDLER_H

int _hg_in_signal_handler(void);

#endif
