pub mod plus_minus {
    use super::*;
    /// Applies each `+` (add y) and `-` (subtract y) of `s` to `x`.
    #[allow(unused_mut)]
    pub fn ll_plus_minus(s: &[u8], x: i64, y: i64) -> i64 {
        let mut __jit_canon = __rt::portal::canonical::Seen::new();
        #[inline(never)]
        fn __jit_off(s: &[u8], x: i64, y: i64) -> i64 {
            __plain_ll_plus_minus(s, x, y)
        }
        if !self::jit::__CONFIG.enabled() {
            self::jit::__CONFIG.tell_off();
            return __jit_off(s, x, y);
        }
        if self::__jit::__runs_plain_ll_plus_minus() {
            return __jit_off(s, x, y);
        }
        if self::__jit::__runs_plain_timed_ll_plus_minus() {
            let __jit_clock = self::__jit::__begin_ll_plus_minus();
            return __jit_off(s, x, y);
        }
        let mut __jit_sampler = self::__jit::__begin_ll_plus_minus();
        let mut acc = x;
        let mut pc = 0;
        #[inline(never)]
        fn __jit_outlined<
            __A0,
            __A1,
            __A2,
            __A3,
            __A4,
            __S,
            __R,
            __F: ::core::ops::FnOnce(
                    __A0,
                    __A1,
                    __A2,
                    __A3,
                    __A4,
                ) -> __rt::portal::Flow<__R, __S>,
        >(
            s: __A0,
            y: __A1,
            __jit_sampler: __A2,
            acc: __A3,
            pc: __A4,
            __jit_f: __F,
        ) -> __rt::portal::Flow<__R, __S> {
            __jit_f(s, y, __jit_sampler, acc, pc)
        }
        let mut __jit_unhooked = false;
        let mut __jit_resumed = false;
        let mut __jit_carried = (s, y, __jit_sampler, acc, pc);
        loop {
            let (s, y, __jit_sampler, acc, pc) = __jit_carried;
            #[allow(unreachable_code)]
            let __jit_flow = __jit_outlined::<
                _,
                _,
                _,
                _,
                _,
                _,
                i64,
                _,
            >(
                s,
                y,
                __jit_sampler,
                acc,
                pc,
                |s, y, __jit_sampler, acc, pc| {
                    #[allow(unused_mut)]
                    let (mut s, mut y, mut __jit_sampler, mut acc, mut pc) = (
                        s,
                        y,
                        __jit_sampler,
                        acc,
                        pc,
                    );
                    let __jit_hooked = !__jit_unhooked;
                    if __jit_resumed || (pc < s.len()) {
                        '__jit_loop: loop {
                            if self::jit::__DUE.any()
                                && {
                                    ::core::hint::cold_path();
                                    __jit_sampler.due()
                                }
                                && {
                                    if __jit_hooked {
                                        let __jit_green = __rt::driver::green_word(
                                            &[
                                                __jit_sampler
                                                    .canonical((&*s) as *const _ as *const u8 as usize as u64),
                                                ((<_ as __rt::portal::ByValue<usize>>::by_value(pc)) as u64),
                                            ],
                                        );
                                        __jit_sampler
                                            .visits_hook(__jit_green, self::__jit::__skip_ll_plus_minus)
                                    } else {
                                        __jit_sampler.idle();
                                        false
                                    }
                                }
                            {
                                return __rt::portal::Flow::Sample((
                                    s,
                                    y,
                                    __jit_sampler,
                                    acc,
                                    pc,
                                ));
                            }
                            loop {
                                #[allow(unused_mut)]
                                let mut __jit_jumped = false;
                                '__jit_b: {
                                    let op = hint!(s[pc], concrete);
                                    if op == b'+' {
                                        acc += y;
                                    } else if op == b'-' {
                                        acc -= y;
                                    }
                                    pc += 1;
                                }
                                if !(pc < s.len()) {
                                    break '__jit_loop;
                                }
                                if __jit_jumped {
                                    continue '__jit_loop;
                                }
                            }
                        }
                    }
                    __rt::portal::Flow::Done(acc)
                },
            );
            #[allow(unused_mut)]
            let (mut s, mut y, mut __jit_sampler, mut acc, mut pc) = match __jit_flow {
                __rt::portal::Flow::Done(__jit_r) => return __jit_r,
                __rt::portal::Flow::Sample(__jit_s) => __jit_s,
            };
            let __jit_result = self::__jit::__portal_ll_plus_minus(
                &*s,
                <_ as __rt::portal::ByValue<i64>>::by_value(y),
                <_ as __rt::portal::ByValue<i64>>::by_value(acc),
                <_ as __rt::portal::ByValue<usize>>::by_value(pc),
                &mut __jit_canon,
            );
            match __jit_result {
                ::core::option::Option::Some(::core::result::Result::Ok(__r)) => {
                    return __r;
                }
                ::core::option::Option::Some(::core::result::Result::Err(__p)) => {
                    acc = __p.acc;
                    pc = __p.pc;
                    __jit_sampler.entered();
                }
                ::core::option::Option::None => {
                    if self::__jit::__gives_up_ll_plus_minus() {
                        __jit_unhooked = true;
                    }
                }
            }
            (__jit_sampler.mask, __jit_sampler.aliases) = self::__jit::__mask_ll_plus_minus();
            __jit_sampler.resumed();
            __jit_resumed = true;
            __jit_carried = (s, y, __jit_sampler, acc, pc);
        }
    }
    #[doc(hidden)]
    #[allow(unused_imports)]
    use ::jitgen::__private::rt as __rt;
    #[doc(hidden)]
    #[allow(
        unused_imports,
        dead_code,
        non_snake_case,
        non_camel_case_types,
        unused_parens,
        unused_variables,
        unused_mut,
        unused_braces,
        unreachable_code,
        unused_labels,
        clippy::all
    )]
    pub mod __jit {
        use super::*;
        pub(super) type __Frame<'a> = __rt::frame::PointFrame<'a>;
        /// A frame at point `p` holding `v`.
        fn __at<'a>(p: u32, v: __rt::Values) -> __Frame<'a> {
            __rt::frame::PointFrame::new(p, false, v)
        }
        #[inline(never)]
        fn __vals0<'a>(
            a0: &'a [u8],
            a1: __rt::RedBox,
            a2: __rt::RedBox,
            a3: usize,
        ) -> __rt::Values {
            __rt::Values::new(
                &[a0.as_ptr() as usize as u64, a0.len() as u64, ((a3) as u64)],
                &[a1, a2],
                ::std::vec![],
            )
        }
        #[inline(never)]
        fn __unvals0<'a>(
            mut __v: __rt::Values,
        ) -> (&'a [u8], __rt::RedBox, __rt::RedBox, usize) {
            (
                __rt::frame::green_slice(__v.word(0usize), __v.word(1usize)),
                __v.red(0usize),
                __v.red(1usize),
                ((__v.word(2usize)) as usize),
            )
        }
        #[inline(never)]
        fn __vals1<'a>(
            a0: &'a [u8],
            a1: __rt::RedBox,
            a2: __rt::RedBox,
        ) -> __rt::Values {
            __rt::Values::new(
                &[a0.as_ptr() as usize as u64, a0.len() as u64],
                &[a1, a2],
                ::std::vec![],
            )
        }
        #[inline(never)]
        fn __unvals1<'a>(
            mut __v: __rt::Values,
        ) -> (&'a [u8], __rt::RedBox, __rt::RedBox) {
            (
                __rt::frame::green_slice(__v.word(0usize), __v.word(1usize)),
                __v.red(0usize),
                __v.red(1usize),
            )
        }
        #[inline(never)]
        fn __vals2<'a>(
            a0: &'a [u8],
            a1: __rt::RedBox,
            a2: usize,
            a3: __rt::RedBox,
        ) -> __rt::Values {
            __rt::Values::new(
                &[a0.as_ptr() as usize as u64, a0.len() as u64, ((a2) as u64)],
                &[a1, a3],
                ::std::vec![],
            )
        }
        #[inline(never)]
        fn __unvals2<'a>(
            mut __v: __rt::Values,
        ) -> (&'a [u8], __rt::RedBox, usize, __rt::RedBox) {
            (
                __rt::frame::green_slice(__v.word(0usize), __v.word(1usize)),
                __v.red(0usize),
                ((__v.word(2usize)) as usize),
                __v.red(1usize),
            )
        }
        #[allow(dead_code)]
        const __OVERFLOW: __rt::Overflow = if cfg!(debug_assertions) {
            __rt::Overflow::Check
        } else {
            __rt::Overflow::Wrap
        };
        /// A compilation, and the state a point's code continues.
        type __C<'a> = __rt::Compilation<__Frame<'a>>;
        type __S<'a> = __rt::JitState<__Frame<'a>>;
        #[allow(unused_variables, unreachable_patterns)]
        fn __deliver_f0<'a>(
            __st: &mut __rt::JitState<__Frame<'a>>,
            __v: __rt::RedBox,
            __c: &mut __rt::Compilation<__Frame<'a>>,
        ) {
            let Some(__f) = __st.frames.last_mut() else {
                return __c.decline("a return without a caller")
            };
            match __f.point {
                _ => __c.decline("a return without a caller"),
            }
        }
        /// Hands a promoted value to the continuation of its promotion.
        #[allow(unused_variables, unreachable_patterns)]
        fn __deliver_promoted<'a>(__st: &mut __rt::JitState<__Frame<'a>>, __w: u64) {
            let __f = __st
                .frames
                .last_mut()
                .expect("jitgen: a promoted value without its continuation");
            match __f.point {
                _ => panic!("jitgen: a promoted value without its continuation"),
            }
        }
        fn __resume_fns() -> __rt::schedule::ResumeFns<__Frame<'static>> {
            __rt::schedule::ResumeFns {
                run: __run,
                deliver: __deliver_promoted,
                defer: __defer,
            }
        }
        /// Ends the path in a flexswitch on `__v` (see `Compilation::flexswitch`).
        /// With `__every_turn`, the promotion runs on every turn of the
        /// portal's loop (see `Compilation::flexswitch_every_turn`).
        fn __promote<'a>(
            __c: &mut __rt::Compilation<__Frame<'a>>,
            __st: __rt::JitState<__Frame<'a>>,
            __v: &__rt::RedBox,
            __every_turn: bool,
        ) {
            __rt::ext::promote(__c, __forever(__st), __v, __every_turn, __resume_fns());
        }
        /// Ends the path in a lazily compiled continuation of `__st`.
        pub(super) fn __defer<'a>(
            __c: &mut __rt::Compilation<__Frame<'a>>,
            __st: __rt::JitState<__Frame<'a>>,
        ) {
            __rt::ext::flexswitch(__c, __forever(__st), None, __resume_fns());
        }
        /// A state kept by a flexswitch, beyond the compilation that made it.
        fn __forever<'a>(
            __st: __rt::JitState<__Frame<'a>>,
        ) -> __rt::JitState<__Frame<'static>> {
            unsafe {
                ::core::mem::transmute::<
                    __rt::JitState<__Frame<'a>>,
                    __rt::JitState<__Frame<'static>>,
                >(__st)
            }
        }
        #[allow(
            unused_variables,
            unused_mut,
            unused_braces,
            unreachable_code,
            unused_labels,
            clippy::all
        )]
        pub(super) fn __run<'a>(
            __c: &mut __rt::Compilation<__Frame<'a>>,
            __start: __rt::JitState<__Frame<'a>>,
        ) {
            let mut __next = Some(__start);
            while let Some(mut __st) = __next.take() {
                if !__c.step() {
                    return;
                }
                let Some(__frame) = __st.frames.pop() else { continue };
                let __r: ::core::option::Option<__rt::JitState<__Frame<'a>>> = match __frame
                    .point
                {
                    0u32 => __point0(__c, __st, __frame),
                    1u32 => __point1(__c, __st, __frame),
                    3u32 => __point3(__c, __st, __frame),
                    4u32 => __point4(__c, __st, __frame),
                    _ => unreachable!("jitgen: a frame at no point of this extension"),
                };
                __next = match __r {
                    Some(__s) => Some(__s),
                    None => __c.next_pending(),
                };
            }
        }
        #[inline(never)]
        fn __point0<'a>(
            __c: &mut __C<'a>,
            mut __st: __S<'a>,
            mut __frame: __Frame<'a>,
        ) -> ::core::option::Option<__S<'a>> {
            'path: {
                let (v0, v1, v2) = __unvals1(__frame.vals);
                let v3: usize = (0 as usize);
                {
                    let __a0 = v1;
                    let __a1 = v3;
                    Some(__st.pushed(__at(1u32, __vals0(v0, v2, __a0, __a1))))
                }
            }
        }
        #[inline(never)]
        fn __point1<'a>(
            __c: &mut __C<'a>,
            mut __st: __S<'a>,
            mut __frame: __Frame<'a>,
        ) -> ::core::option::Option<__S<'a>> {
            'path: {
                if !__frame.merged {
                    __frame.merged = true;
                    __st.frames.push(__frame);
                    break 'path __rt::ext::loop_head(__c, __st);
                }
                let (v0, v2, v7, v8) = __unvals0(__frame.vals);
                let v14: usize = v0.len();
                let v15: bool = v8 < v14;
                if v15 {
                    Some(__st.pushed(__at(3u32, __vals0(v0, v2, v7, v8))))
                } else {
                    {
                        {
                            let __rv = v7;
                            __return_f0(__c, __st, __rv)
                        }
                    }
                }
            }
        }
        #[inline(never)]
        fn __point3<'a>(
            __c: &mut __C<'a>,
            mut __st: __S<'a>,
            mut __frame: __Frame<'a>,
        ) -> ::core::option::Option<__S<'a>> {
            'path: {
                if __st.frames.is_empty() && __c.parking() {
                    __st.heap.write_back(&mut __c.b);
                    __st.frames.push(__frame);
                    __st.untail_lists(&mut __c.b);
                    if !__st.unspill_all(&mut __c.b) {
                        __c.decline(
                            "a frame on the continuation stack that this thread did not spill",
                        );
                        break 'path None;
                    }
                    __c.park(::std::boxed::Box::new(__forever(__st)));
                    break 'path None;
                }
                let (v0, v2, v7, v8) = __unvals0(__frame.vals);
                let v17: u8 = match v0.get(v8 as usize) {
                    Some(__x) => *__x,
                    None => {
                        __c.b
                            .red_bounds_check(
                                &__rt::RedBox::u64(v8 as u64),
                                &__rt::RedBox::u64(v0.len() as u64),
                            );
                        __c.error_exit(__rt::ops::ErrorKind::IndexOutOfBounds);
                        break 'path None;
                    }
                };
                let v18: u8 = v17;
                let v26: bool = v18 == (43 as u8);
                if v26 {
                    {
                        let v27: __rt::RedBox = __c
                            .b
                            .red_bin(__rt::BinOp::Add, __OVERFLOW, &v7, &v2);
                        {
                            let __a0 = v27;
                            Some(__st.pushed(__at(4u32, __vals2(v0, v2, v8, __a0))))
                        }
                    }
                } else {
                    {
                        let v35: bool = v18 == (45 as u8);
                        if v35 {
                            {
                                let v36: __rt::RedBox = __c
                                    .b
                                    .red_bin(__rt::BinOp::Sub, __OVERFLOW, &v7, &v2);
                                {
                                    let __a0 = v36;
                                    Some(__st.pushed(__at(4u32, __vals2(v0, v2, v8, __a0))))
                                }
                            }
                        } else {
                            {
                                let __a0 = v7;
                                Some(__st.pushed(__at(4u32, __vals2(v0, v2, v8, __a0))))
                            }
                        }
                    }
                }
            }
        }
        #[inline(never)]
        fn __point4<'a>(
            __c: &mut __C<'a>,
            mut __st: __S<'a>,
            mut __frame: __Frame<'a>,
        ) -> ::core::option::Option<__S<'a>> {
            'path: {
                if !__frame.merged {
                    __frame.merged = true;
                    __st.frames.push(__frame);
                    break 'path __rt::ext::join(__c, __st);
                }
                let (v0, v2, v8, v22) = __unvals2(__frame.vals);
                let v37: usize = match __rt::ops::fold_bin(
                    __rt::BinOp::Add,
                    __rt::ValTy::U64,
                    __OVERFLOW,
                    ((v8) as u64),
                    (((1 as usize)) as u64),
                ) {
                    Ok(__w) => ((__w) as usize),
                    Err(__k) => {
                        __c.error_exit(__k);
                        break 'path None;
                    }
                };
                {
                    let __a0 = v22;
                    let __a1 = v37;
                    Some(__st.pushed(__at(1u32, __vals0(v0, v2, __a0, __a1))))
                }
            }
        }
        fn __return_f0<'a>(
            __c: &mut __C<'a>,
            mut __st: __S<'a>,
            mut __rv: __rt::RedBox,
        ) -> ::core::option::Option<__S<'a>> {
            'path: {
                if __st.frames.is_empty() {
                    __st.heap.write_back(&mut __c.b);
                    __c.finish_return(&[__rv]);
                    None
                } else {
                    __deliver_f0(&mut __st, __rv, __c);
                    Some(__st)
                }
            }
        }
        /// Per resume point, what lies ahead that compiled code cannot do
        /// (an index into `__AHEAD_WHY` plus one; 0 for nothing), up to the
        /// merge point, then up to the return.
        const __AHEAD_PARKING: &[u16] = &[
            0u16, 0u16, 0u16, 0u16, 0u16, 0u16, 0u16, 0u16,
        ];
        const __AHEAD_FULL: &[u16] = &[0u16, 0u16, 0u16, 0u16, 0u16, 0u16, 0u16, 0u16];
        const __AHEAD_WHY: &[&str] = &[];
        /// What a flexswitch resuming at `point` may meet, in a case
        /// compiled later, that compiled code cannot do (see the macro's
        /// `ahead`).
        pub(super) fn __declines_ahead(
            point: u32,
            parks: bool,
        ) -> ::core::option::Option<&'static str> {
            let table = if parks { __AHEAD_PARKING } else { __AHEAD_FULL };
            match table.get(point as usize) {
                Some(&k) if k > 0 => __AHEAD_WHY.get(k as usize - 1).copied(),
                _ => None,
            }
        }
        /// The interpreter loop's sampler at the start of a call of the
        /// portal, which reports its end to `portal::slow`.
        #[inline(never)]
        pub(super) fn __begin_ll_plus_minus() -> __rt::driver::LoopSampler {
            super::jit::__DUE.list();
            let __work = super::jit::__STATS.compile_work();
            let __ticks = super::jit::__CONFIG.hot_policy().warmup;
            __SAMPLER_LL_PLUS_MINUS
                .with(|__s| {
                    __s.set_ticks(__ticks);
                    let __timed = __s.begin_call(__work);
                    let __began = if __timed {
                        __s.call_began()
                    } else {
                        ::core::option::Option::None
                    };
                    let mut __l = __rt::driver::LoopSampler::begin(
                        __s.entry_mask(),
                        __began,
                        __end_ll_plus_minus,
                        __s.joins_wait(),
                    );
                    __l.aliases = __s.aliases();
                    __l
                })
        }
        /// A call of the portal ended (see `PortalSite::call_ended`).
        #[inline(never)]
        fn __end_ll_plus_minus(__took: ::core::option::Option<::std::time::Duration>) {
            let __site = __rt::driver::PortalSite {
                cache: &__CACHE_LL_PLUS_MINUS,
                sampler: &__SAMPLER_LL_PLUS_MINUS,
                config: &super::jit::__CONFIG,
                stats: &super::jit::__STATS,
                nested: false,
            };
            __site.call_ended(__took);
        }
        /// Compiles the entry; `__words` (the inputs residual code would
        /// get now) lets it promote loop-invariant divisors at entry.
        #[allow(unused_variables, unused_mut, clippy::all)]
        pub(super) fn __compile_portal_ll_plus_minus<'a>(
            s: &'a [u8],
            pc: usize,
            __words: ::core::option::Option<&[u64]>,
        ) -> ::core::result::Result<
            __rt::residual::ResidualFunction,
            ::std::string::String,
        > {
            let __body = || -> ::core::result::Result<
                __rt::residual::ResidualFunction,
                ::std::string::String,
            > {
                let __inputs = {
                    let mut __t: ::std::vec::Vec<__rt::ValTy> = ::std::vec::Vec::new();
                    __t.push(__rt::ValTy::I64);
                    __t.push(__rt::ValTy::I64);
                    __t
                };
                let __outputs: ::std::vec::Vec<__rt::ValTy> = vec![__rt::ValTy::I64];
                let __new = || {
                    let mut __c: __rt::Compilation<__Frame<'a>> = __rt::Compilation::new(
                        "ll_plus_minus",
                        &__inputs,
                        &__outputs,
                        super::jit::__CONFIG.limits(),
                    );
                    __c.set_defer(Some(&super::jit::__STATS), __defer);
                    __c.set_declines_ahead(__declines_ahead, __words.is_some());
                    if __words.is_some() {
                        __c.set_declines_recursion();
                    }
                    __c
                };
                let __build = |
                    __c: &mut __rt::Compilation<__Frame<'a>>,
                | -> __rt::JitState<__Frame<'a>> {
                    let mut __in = __c.inputs().into_iter();
                    let mut __heap = __rt::virtuals::VHeap::default();
                    let v0 = s;
                    let v2 = __in.next().expect("an input");
                    let v7 = __in.next().expect("an input");
                    let v8 = pc;
                    let __frame = __at(3u32, __vals0(v0, v2, v7, v8));
                    __rt::JitState::with_heap(__frame, __heap)
                };
                let mut __c = __new();
                let __st = __build(&mut __c);
                let __entry = __words.map(|_| __st.clone());
                __c.mark_entry();
                __run(&mut __c, __st);
                let __facts = __rt::ext::entry_facts(&mut __c);
                if let (false, false, Some(__w), Some(__entry)) = (
                    __c.is_declined(),
                    __facts.is_empty(),
                    __words,
                    __entry,
                ) {
                    let __now = ::std::panic::catch_unwind(
                        ::std::panic::AssertUnwindSafe(|| {
                            let mut __x: __rt::Compilation<__Frame<'a>> = __rt::Compilation::executing(
                                "ll_plus_minus",
                                &__inputs,
                                __w,
                                &__outputs,
                            );
                            let mut __now = __build(&mut __x);
                            __now.forget_fields();
                            __now.normalize();
                            __now.reds()
                        }),
                    );
                    if let Ok(__now) = __now {
                        __rt::ext::version_entry(&mut __c, __entry, &__facts, &__now);
                    }
                }
                __rt::ext::finish(__c).map_err(|d| ::std::format!("{d:?}"))
            };
            match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(__body)) {
                Ok(r) => r,
                Err(_) => {
                    Err(::std::string::String::from("the generating extension panicked"))
                }
            }
        }
        /// The listings of this portal's compiled code (this thread's).
        pub(super) fn __listings_ll_plus_minus() -> ::std::vec::Vec<
            ::std::string::String,
        > {
            __CACHE_LL_PLUS_MINUS.with(|__c| __c.borrow().listings())
        }
        ::std::thread_local! {
            static __CACHE_LL_PLUS_MINUS : ::core::cell::RefCell <
            __rt::driver::PortalCache < [u64; 3usize] >> = const {
            ::core::cell::RefCell::new(__rt::driver::PortalCache::new()) }; #[doc =
            r" Which merge point visits to skip, and where code starts."] static
            __SAMPLER_LL_PLUS_MINUS : __rt::driver::Sampler = const {
            __rt::driver::Sampler::new() };
        }
        /// The variables a portal gets back when it continues in the interpreter.
        #[allow(non_camel_case_types)]
        pub(super) struct __Parked_ll_plus_minus {
            pub acc: i64,
            pub pc: usize,
        }
        /// Whether the portal skips this visit of its merge point,
        /// and how many after it (see `Sampler::ask`): one call out
        /// of the interpreter loop, made only when its countdown
        /// runs out, the sampling clock ticks, or its entry mask lets
        /// the visit through.
        #[inline(never)]
        pub(super) fn __skip_ll_plus_minus(
            __due: bool,
            __left: u32,
            __green: u64,
        ) -> ::core::option::Option<u32> {
            __SAMPLER_LL_PLUS_MINUS.with(|__s| __s.ask(__due, __left, __green))
        }
        /// The entry filter folded for the interpreter loop's local
        /// (see `Sampler::entry_mask`).
        #[inline(never)]
        pub(super) fn __mask_ll_plus_minus() -> (u64, __rt::driver::Aliases) {
            __SAMPLER_LL_PLUS_MINUS.with(|__s| (__s.entry_mask(), __s.aliases()))
        }
        #[allow(unused_variables, unused_mut, dead_code, clippy::all)]
        pub(super) fn __portal_ll_plus_minus(
            s: &[u8],
            y: i64,
            acc: i64,
            pc: usize,
            __canon: &mut __rt::portal::canonical::Seen,
        ) -> ::core::option::Option<
            ::core::result::Result<i64, __Parked_ll_plus_minus>,
        > {
            let __cfg = &super::jit::__CONFIG;
            if !__cfg.enabled() {
                return None;
            }
            let __aliases = __SAMPLER_LL_PLUS_MINUS.with(|__s| __s.aliases());
            let __loop_word = __rt::driver::green_word(
                &[
                    __rt::driver::alias(
                        &__aliases,
                        s as *const _ as *const u8 as usize as u64,
                    ),
                    ((pc) as u64),
                ],
            );
            let __given = [s as *const _ as *const u8 as usize as u64];
            let s: &[u8] = __rt::portal::canonical::scalars(s, __canon);
            let __entry_word = __rt::driver::green_word(
                &[s as *const _ as *const u8 as usize as u64, ((pc) as u64)],
            );
            __SAMPLER_LL_PLUS_MINUS
                .with(|__s| {
                    __s
                        .canonical(
                            __loop_word,
                            __entry_word,
                            &__given,
                            &[s as *const _ as *const u8 as usize as u64],
                        )
                });
            let __key: [u64; 3usize] = [
                s as *const _ as *const u8 as usize as u64,
                s.len() as u64,
                ((pc) as u64),
            ];
            let __site = __rt::driver::PortalSite {
                cache: &__CACHE_LL_PLUS_MINUS,
                sampler: &__SAMPLER_LL_PLUS_MINUS,
                config: __cfg,
                stats: &super::jit::__STATS,
                nested: false,
            };
            let __hot = __site.visit(&__key, &[__rt::driver::content_bytes(&s[..])])?;
            let __content: &[&[u8]] = &[__rt::driver::content_bytes(&s[..])];
            let mut __words: ::std::vec::Vec<u64> = ::std::vec::Vec::new();
            __words.push(((y) as u64));
            __words.push(((acc) as u64));
            let __code = __site
                .code(
                    __hot,
                    __key,
                    __content,
                    &__words,
                    &mut |__w| __compile_portal_ll_plus_minus(s, pc, Some(__w)),
                    &|| __entry_word,
                )?;
            let __mark = __rt::heap::arena_mark();
            let __t0 = __site.nested.then(::std::time::Instant::now);
            __site.entering_code();
            let __out = __rt::residual::call_parking(&__code, &__words);
            __site.left_code();
            let __r = match __out {
                Ok(__w) => Ok(((__w[0]) as i64)),
                Err(__rt::residual::ResidualError::Parked(__p)) => {
                    __site.handed_over(&__key, __t0.map(|__t| __t.elapsed()));
                    let __st = *__p
                        .downcast::<__rt::JitState<__Frame<'static>>>()
                        .expect("jitgen: a state of this portal");
                    let __vheap = __st.heap;
                    match __st.frames.into_iter().next_back() {
                        Some(__f) if __f.point == 3u32 => {
                            let (_, _, v7, v8) = __unvals0(__f.vals);
                            Err(__Parked_ll_plus_minus {
                                acc: ((v7
                                    .as_const()
                                    .expect(
                                        "jitgen: `acc` is not known when handing over to the interpreter",
                                    )) as i64),
                                pc: v8,
                            })
                        }
                        _ => {
                            panic!(
                                "jitgen: the interpreter stopped elsewhere than the merge point"
                            )
                        }
                    }
                }
                Err(__e) => {
                    __rt::heap::arena_release(__mark);
                    __e.resume()
                }
            };
            __rt::heap::arena_release(__mark);
            Some(__r)
        }
        /// Whether this call of the portal goes on without its hook (see `Sampler::gives_up`); counted.
        #[inline(never)]
        pub(super) fn __gives_up_ll_plus_minus() -> bool {
            let __yes = __SAMPLER_LL_PLUS_MINUS.with(|__s| __s.gives_up());
            if __yes {
                super::jit::__STATS.unhooked();
            }
            __yes
        }
        /// Whether this call of the portal runs the plain interpreter, timed (see `Sampler::runs_plain_timed`); counted.
        #[inline(never)]
        pub(super) fn __runs_plain_timed_ll_plus_minus() -> bool {
            let __yes = __SAMPLER_LL_PLUS_MINUS.with(|__s| __s.runs_plain_timed());
            if __yes {
                super::jit::__STATS.unhooked();
            }
            __yes
        }
        /// Whether this call of the portal runs the plain interpreter (see `Sampler::runs_plain`); counted.
        #[inline(never)]
        pub(super) fn __runs_plain_ll_plus_minus() -> bool {
            let __yes = __SAMPLER_LL_PLUS_MINUS.with(|__s| __s.runs_plain());
            if __yes {
                super::jit::__STATS.unhooked();
            }
            __yes
        }
        /// Compiles the entry; `__words` (the inputs residual code would
        /// get now) lets it promote loop-invariant divisors at entry.
        #[allow(unused_variables, unused_mut, clippy::all)]
        pub(super) fn __specialize_ll_plus_minus<'a>(
            s: &'a [u8],
            __words: ::core::option::Option<&[u64]>,
        ) -> ::core::result::Result<
            __rt::residual::ResidualFunction,
            ::std::string::String,
        > {
            let __body = || -> ::core::result::Result<
                __rt::residual::ResidualFunction,
                ::std::string::String,
            > {
                let __inputs = {
                    let mut __t: ::std::vec::Vec<__rt::ValTy> = ::std::vec::Vec::new();
                    __t.push(__rt::ValTy::I64);
                    __t.push(__rt::ValTy::I64);
                    __t
                };
                let __outputs: ::std::vec::Vec<__rt::ValTy> = vec![__rt::ValTy::I64];
                let __new = || {
                    let mut __c: __rt::Compilation<__Frame<'a>> = __rt::Compilation::new(
                        "ll_plus_minus",
                        &__inputs,
                        &__outputs,
                        super::jit::__CONFIG.limits(),
                    );
                    __c.set_defer(Some(&super::jit::__STATS), __defer);
                    __c.set_declines_ahead(__declines_ahead, __words.is_some());
                    if __words.is_some() {
                        __c.set_declines_recursion();
                    }
                    __c
                };
                let __build = |
                    __c: &mut __rt::Compilation<__Frame<'a>>,
                | -> __rt::JitState<__Frame<'a>> {
                    let mut __in = __c.inputs().into_iter();
                    let mut __heap = __rt::virtuals::VHeap::default();
                    let v0 = s;
                    let v1 = __in.next().expect("an input");
                    let v2 = __in.next().expect("an input");
                    let __frame = __at(0u32, __vals1(v0, v1, v2));
                    __rt::JitState::with_heap(__frame, __heap)
                };
                let mut __c = __new();
                let __st = __build(&mut __c);
                let __entry = __words.map(|_| __st.clone());
                __c.mark_entry();
                __run(&mut __c, __st);
                let __facts = __rt::ext::entry_facts(&mut __c);
                if let (false, false, Some(__w), Some(__entry)) = (
                    __c.is_declined(),
                    __facts.is_empty(),
                    __words,
                    __entry,
                ) {
                    let __now = ::std::panic::catch_unwind(
                        ::std::panic::AssertUnwindSafe(|| {
                            let mut __x: __rt::Compilation<__Frame<'a>> = __rt::Compilation::executing(
                                "ll_plus_minus",
                                &__inputs,
                                __w,
                                &__outputs,
                            );
                            let mut __now = __build(&mut __x);
                            __now.forget_fields();
                            __now.normalize();
                            __now.reds()
                        }),
                    );
                    if let Ok(__now) = __now {
                        __rt::ext::version_entry(&mut __c, __entry, &__facts, &__now);
                    }
                }
                __rt::ext::finish(__c).map_err(|d| ::std::format!("{d:?}"))
            };
            match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(__body)) {
                Ok(r) => r,
                Err(_) => {
                    Err(::std::string::String::from("the generating extension panicked"))
                }
            }
        }
    }
    /// What `#[jit_interpreter]` derived from this module.
    pub mod jit {
        #[allow(unused_imports)]
        use super::__rt;
        const __SOURCE: &str = "pub mod plus_minus { use super :: * ; # [doc = \" Applies each `+` (add y) and `-` (subtract y) of `s` to `x`.\"] pub fn ll_plus_minus (s : & [u8] , x : i64 , y : i64) -> i64 { let mut acc = x ; let mut pc = 0 ; while pc < s . len () { hint ! (global_merge_point) ; let op = hint ! (s [pc] , concrete) ; if op == b'+' { acc += y ; } else if op == b'-' { acc -= y ; } pc += 1 ; } acc } }";
        const __EXTERNAL: &str = "";
        #[doc(hidden)]
        pub static __CONFIG: __rt::driver::Config = __rt::driver::Config::new();
        #[doc(hidden)]
        pub static __STATS: __rt::driver::Stats = __rt::driver::Stats::new();
        #[doc(hidden)]
        pub(crate) static __DUE: __rt::driver::DueCount = __rt::driver::DueCount::new();
        /// The colored flow graphs of every function of the module (computed
        /// on each call); none where the module is left to Rust.
        pub fn graphs() -> ::jitgen::__private::ColoredGraphs {
            ::jitgen::__private::graphs_from_source(__SOURCE, __EXTERNAL)
        }
        /// Counts: compilations, residual operations, entries into residual code, ...
        pub fn stats() -> __rt::driver::StatsSnapshot {
            __STATS.snapshot()
        }
        /// Settings: threshold, on/off (the environment's JITGEN_THRESHOLD and JITGEN_OFF by default).
        pub fn config() -> &'static __rt::driver::Config {
            &__CONFIG
        }
        /// The listings of the code the portals compiled so far in this
        /// thread, with their flexswitch cases (for tests and tools).
        pub fn portal_listings() -> ::std::vec::Vec<::std::string::String> {
            let mut __l = ::std::vec::Vec::new();
            __l.extend(super::__jit::__listings_ll_plus_minus());
            __l
        }
        /// Why the last declined compilation gave up, if one did.
        pub fn last_decline() -> ::core::option::Option<::std::string::String> {
            __STATS.last_decline()
        }
        /// The functions and items of the module left to Rust (called
        /// as they are from compiled code, never inlined), one line per
        /// reason: `name: line:column: what is not supported`.
        pub fn left_to_rust() -> ::std::vec::Vec<::std::string::String> {
            []
                .iter()
                .map(|__l: &&str| ::std::string::ToString::to_string(*__l))
                .collect()
        }
        /// The unmodified interpreter: never compiles.
        #[allow(unused_imports, clippy::all)]
        pub mod plain {
            use super::super::*;
            pub use super::super::__plain_ll_plus_minus as ll_plus_minus;
        }
        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports, clippy::all)]
        pub mod __specialize {
            use super::super::*;
            use super::super::__jit::*;
            ///`ll_plus_minus` specialized to its green arguments: a residual function of its red ones.
            ///
            ///It borrows the green arguments: the compiler may resume from them when a promotion meets a new value.
            pub struct ResidualLlPlusMinus<'a> {
                f: __rt::residual::ResidualFn,
                _greens: ::core::marker::PhantomData<&'a ()>,
            }
            impl<'a> ResidualLlPlusMinus<'a> {
                /// Runs the residual code; panics where the interpreter would.
                #[allow(unused_mut, unused_variables)]
                pub fn call(&self, x: i64, y: i64) -> i64 {
                    let mut __words: ::std::vec::Vec<u64> = ::std::vec::Vec::new();
                    __words.push(((x) as u64));
                    __words.push(((y) as u64));
                    let __mark = __rt::heap::arena_mark();
                    let __out = self.f.call_words(&__words);
                    let __r = __out.map(|__w| ((__w[0]) as i64));
                    __rt::heap::arena_release(__mark);
                    match __r {
                        Ok(__v) => __v,
                        Err(__e) => __e.resume(),
                    }
                }
                /// The residual operations, one per line.
                pub fn listing(&self) -> &str {
                    self.f.listing()
                }
                /// The listing followed by the flexswitch cases compiled so far.
                pub fn listing_with_cases(&self) -> ::std::string::String {
                    self.f.listing_with_cases()
                }
                /// The compiled function.
                pub fn function(&self) -> &__rt::residual::ResidualFn {
                    &self.f
                }
            }
            ///`ll_plus_minus` specialized to its green arguments: a residual function of its red ones.
            #[allow(clippy::all)]
            pub fn ll_plus_minus<'a>(s: &'a [u8]) -> ResidualLlPlusMinus<'a> {
                match __rt::residual::native(
                    super::super::__jit::__specialize_ll_plus_minus(s, None),
                ) {
                    Ok(f) => {
                        super::__STATS.compiled(Some(f.op_count()), 0);
                        ResidualLlPlusMinus {
                            f,
                            _greens: ::core::marker::PhantomData,
                        }
                    }
                    Err(why) => {
                        panic!(
                            "jit::specialize::{} could not compile: {}", "ll_plus_minus",
                            why
                        )
                    }
                }
            }
        }
        /// The generating extensions called directly: specialize a function to its green arguments.
        #[allow(non_snake_case, unused_imports)]
        pub mod specialize {
            pub use super::__specialize::*;
        }
    }
    /// Applies each `+` (add y) and `-` (subtract y) of `s` to `x`.
    #[doc(hidden)]
    pub fn __plain_ll_plus_minus(s: &[u8], x: i64, y: i64) -> i64 {
        let mut acc = x;
        let mut pc = 0;
        while pc < s.len() {
            hint!(global_merge_point);
            let op = hint!(s[pc], concrete);
            if op == b'+' {
                acc += y;
            } else if op == b'-' {
                acc -= y;
            }
            pc += 1;
        }
        acc
    }
}
