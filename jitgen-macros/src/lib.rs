use proc_macro as _;
