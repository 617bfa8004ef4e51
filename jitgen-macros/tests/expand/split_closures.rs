pub struct Vm {
    stack: Vec<i64>,
    pc: usize,
}
fn halve_sum(a: i64, b: i64) -> i64 {
    (a + b) / 2
}
fn apply_to(f: fn(i64) -> i64, x: i64) -> i64 {
    f(x)
}
impl Vm {
    #[allow(dead_code)]
    fn binary(&mut self, f: impl Fn(i64, i64) -> i64) {
        let b = self.stack.pop().unwrap();
        let a = self.stack.pop().unwrap();
        self.stack.push(f(a, b));
    }
    #[allow(dead_code)]
    fn test<F>(&mut self, f: F) -> bool
    where
        F: Fn(i64) -> bool,
    {
        f(self.stack[0])
    }
    #[allow(dead_code)]
    fn apply<F: FnMut(i64)>(&mut self, f: F) {
        self.stack.iter().copied().for_each(f)
    }
    #[allow(dead_code)]
    fn checked(&mut self, f: fn(i64, i64) -> Option<i64>) -> Option<()> {
        let b = self.stack.pop()?;
        let a = self.stack.pop()?;
        self.stack.push(f(a, b)?);
        Some(())
    }
    #[allow(dead_code)]
    fn table(&mut self, f: fn(i64) -> i64) {
        self.stack.push(apply_to(f, 2))
    }
    fn mid(a: i64, b: i64) -> i64 {
        a / 2 + b / 2
    }
    pub fn run(&mut self) -> Result<i64, Box<dyn std::error::Error>> {
        let self_ = self;
        {
            let mut __self_cells_value = __Vm_run_cells { pc: self_.pc };
            let __self_cells = &mut __self_cells_value;
            let __self_pc_at_entry = self_.pc;
            let mut __self_stack_value = __Vm_run_stack(
                ::core::mem::take(&mut self_.stack),
            );
            let __self_stack = &mut __self_stack_value;
            let __jit_r = __Vm_run(__self_cells, __self_pc_at_entry, __self_stack);
            self_.pc = __self_cells_value.pc;
            self_.stack = __self_stack_value.0;
            __jit_r
        }
    }
}
///The scalar fields of `Vm` while `run` runs (see `jitgen`'s split of `self`).
#[doc(hidden)]
#[virtualizable]
#[allow(non_camel_case_types)]
pub struct __Vm_run_cells {
    pub pc: usize,
}
///The field `stack` of `Vm` while `run` runs (see `jitgen`'s split of `self`).
#[doc(hidden)]
#[allow(non_camel_case_types)]
pub struct __Vm_run_stack(pub Vec<i64>);
#[doc(hidden)]
#[allow(non_snake_case, unreachable_code, unused_parens, unused_braces)]
pub fn __Vm_run(
    __self_cells: &mut __Vm_run_cells,
    __self_pc_at_entry: usize,
    __self_stack: &mut __Vm_run_stack,
) -> Result<i64, Box<dyn std::error::Error>> {
    #[allow(unused_mut, unused_variables)]
    let mut __self_pc = __self_pc_at_entry;
    loop {
        hint!(global_merge_point);
        {
            __self_pc += 1;
            __self_cells.pc = __self_pc;
        };
        {
            {
                let b = (__self_stack.0).pop().unwrap();
                let a = (__self_stack.0).pop().unwrap();
                (__self_stack.0)
                    .push({
                        let __jitgen_closure_arg0 = a;
                        let __jitgen_closure_arg1 = b;
                        let a = __jitgen_closure_arg0;
                        let b = __jitgen_closure_arg1;
                        a.wrapping_add(b)
                    });
            }
        };
        {
            {
                let b = (__self_stack.0).pop().unwrap();
                let a = (__self_stack.0).pop().unwrap();
                (__self_stack.0)
                    .push({
                        let __jitgen_closure_arg0 = a;
                        let __jitgen_closure_arg1 = b;
                        let __jitgen_fn_arg0 = __jitgen_closure_arg0;
                        let __jitgen_fn_arg1 = __jitgen_closure_arg1;
                        halve_sum(__jitgen_fn_arg0, __jitgen_fn_arg1)
                    });
            }
        };
        {
            {
                let b = (__self_stack.0).pop().unwrap();
                let a = (__self_stack.0).pop().unwrap();
                (__self_stack.0)
                    .push({
                        let __jitgen_closure_arg0 = a;
                        let __jitgen_closure_arg1 = b;
                        let __jitgen_fn_arg0 = __jitgen_closure_arg0;
                        let __jitgen_fn_arg1 = __jitgen_closure_arg1;
                        Vm::mid(__jitgen_fn_arg0, __jitgen_fn_arg1)
                    });
            }
        };
        {
            {
                let __jit_m: Option<()> = '__jit_m1: loop {
                    break '__jit_m1 ({
                        let b = match (__self_stack.0).pop() {
                            Some(__jit_v) => __jit_v,
                            None => break '__jit_m1 None,
                        };
                        let a = match (__self_stack.0).pop() {
                            Some(__jit_v) => __jit_v,
                            None => break '__jit_m1 None,
                        };
                        (__self_stack.0)
                            .push(
                                match {
                                    let __jitgen_closure_arg0 = a;
                                    let __jitgen_closure_arg1 = b;
                                    let __jitgen_fn_arg0 = __jitgen_closure_arg0;
                                    let __jitgen_fn_arg1 = __jitgen_closure_arg1;
                                    i64::checked_sub(__jitgen_fn_arg0, __jitgen_fn_arg1)
                                } {
                                    Some(__jit_v) => __jit_v,
                                    None => break '__jit_m1 None,
                                },
                            );
                        Some(())
                    });
                };
                __jit_m
            }
        };
        {
            let f: fn(i64) -> i64 = i64::wrapping_neg;
            (__self_stack.0).push(apply_to(f, 2))
        };
        if {
            {
                {
                    let __jitgen_closure_arg0 = (__self_stack.0)[0];
                    let x = __jitgen_closure_arg0;
                    x > 3
                }
            }
        } {
            return {
                let __jit_r: Result<i64, Box<dyn std::error::Error>> = Err(
                    Box::new(std::fmt::Error),
                );
                __jit_r
            };
        }
        let mut n = 0;
        {
            let f: &mut dyn FnMut(i64) = &mut (|x| n += x);
            { (__self_stack.0).iter().copied().for_each(f) }
        };
        (__self_stack.0).push(n);
    }
}
